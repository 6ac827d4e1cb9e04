//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// restoredCluster is a view of a cluster other than the suite's "bao" in a spec's
// namespace: its CA and its members' addresses, to read KV entries with the app
// role the restored data holds.
type restoredCluster struct {
	ns, name string
	caPEM    []byte
	ips      map[string]string
}

// viewOf reads the cluster's CA and its n members' pod IPs.
func viewOf(ctx context.Context, ns, cluster string, n int) *restoredCluster {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: cluster + "-tls"}, s)).To(Succeed())
	v := &restoredCluster{ns: ns, name: cluster, caPEM: s.Data["ca.crt"], ips: map[string]string{}}
	for i := range n {
		m := fmt.Sprintf("%s-%d", cluster, i)
		p, err := cs.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		v.ips[m] = p.Status.PodIP
	}
	return v
}

// read reads field of secret/data/<key> through member m with the app role; found
// is false when the key does not exist.
func (v *restoredCluster) read(ctx context.Context, m, key, field string) (value string, found bool) {
	GinkgoHelper()
	host := fmt.Sprintf("%s.%s-internal.%s.svc", m, v.name, v.ns)
	s, err := apiClient(v.caPEM, v.ips[m], host, "").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login",
		map[string]any{"role": "app", "jwt": token(ctx, v.ns, appSA)})
	Expect(err).NotTo(HaveOccurred(), "the app role of the restored data logs in through %s", m)
	got, err := apiClient(v.caPEM, v.ips[m], host, s.Auth.ClientToken).Logical().ReadWithContext(ctx, "secret/data/"+key)
	Expect(err).NotTo(HaveOccurred())
	if got == nil || got.Data["data"] == nil {
		return "", false
	}
	data, _ := got.Data["data"].(map[string]any)
	value, _ = data[field].(string)
	return value, true
}

// restoreIntoNewCluster is the spec of issue 24's restore into a new cluster, run
// on the snapshot spec's cluster and S3 server: a snapshot requested while the
// cluster serves, kubectl bao restore --into, and the new cluster's data compared
// with what was acknowledged before and after the snapshot.
func restoreIntoNewCluster(ctx context.Context, tc *testCluster, restoreCheck string) {
	GinkgoHelper()
	const into = "bao2"
	obs := tc.observe(ctx)
	time.Sleep(3 * time.Second) // writes before the snapshot
	requested := time.Now()
	obs.beginWindow()
	out := kubectlBao(ctx, "snapshot", name, "-n", snapNS, "--wait", "-o", "json")
	GinkgoWriter.Printf("snapshot: %s\n", out)
	c := tc.get(ctx, Default)
	receipt := c.Status.Snapshots.Taken[0]
	Expect(receipt.TakenAt).NotTo(BeNil())
	// TakenAt has a resolution of a second, and is set after the upload: a write
	// acknowledged more than a second after it came after the snapshot.
	after := receipt.TakenAt.Add(time.Second)
	for time.Now().Before(after.Add(3 * time.Second)) {
		time.Sleep(pollEvery)
	}
	tc.writeKV(ctx, "after-snapshot", "lost-by-the-restore")
	obs.endWindow()
	res := obs.finish(ctx)
	res.report("a requested snapshot to restore from", "snapshot "+receipt.Location)
	res.expectNoLoss()
	res.expectElections(0, "")
	acks := obs.w.acks
	var before, later []ack
	for _, a := range acks {
		switch {
		case a.at.Before(requested):
			before = append(before, a)
		case a.at.After(after):
			later = append(later, a)
		}
	}
	Expect(len(before)).To(BeNumerically(">=", 5), "writes acknowledged before the snapshot was requested")
	Expect(len(later)).To(BeNumerically(">=", 5), "writes acknowledged after the snapshot")

	By("kubectl bao restore: a new cluster from that snapshot")
	started := time.Now()
	out = kubectlBao(ctx, "restore", name, "--into", into, "-n", snapNS, "--sha256", receipt.SHA256)
	GinkgoWriter.Printf("kubectl bao restore: %s\n", out)
	Expect(out).To(ContainSubstring("Created openbaocluster " + snapNS + "/" + into + " from " + receipt.Location))
	_, stderr, err := runKubectlBao(ctx, "restore", name, "--into", into, "-n", snapNS)
	Expect(err).To(HaveOccurred(), "a second restore into the same name is refused")
	Expect(stderr).To(ContainSubstring("exists"))

	By("no client Service until the data is the snapshot's")
	var restored *baov1.OpenBaoCluster
	var sawRestoring bool
	Eventually(func(g Gomega) {
		// The Service first: it is created after the status that says restored, so
		// a cluster read after it never says restoring while the Service exists.
		svcErr := k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: into}, &corev1.Service{})
		activeErr := k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: into + "-active"}, &corev1.Service{})
		nc := &baov1.OpenBaoCluster{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: into}, nc)).To(Succeed())
		cond := meta.FindStatusCondition(nc.Status.Conditions, string(baov1.ConditionRestored))
		if cond == nil || cond.Status != metav1.ConditionTrue {
			Expect(apierrors.IsNotFound(svcErr)).To(BeTrue(), "no client Service before the restore succeeded (status %s): %v", nc.Status.Message, svcErr)
			Expect(apierrors.IsNotFound(activeErr)).To(BeTrue(), "no active Service before the restore succeeded either: %v", activeErr)
			Expect(nc.Status.Phase).NotTo(Equal(baov1.PhaseRunning), "not Running before the restore")
			Expect(nc.Status.Restore).NotTo(HaveField("Step", baov1.RestoreStepFailed), nc.Status.Message)
			sawRestoring = sawRestoring || nc.Status.Restore != nil
		}
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), nc.Status.Message)
		g.Expect(nc.Status.Phase).To(Equal(baov1.PhaseRunning), nc.Status.Message)
		g.Expect(nc.Status.Voters).To(Equal("3/3"), "grown to 3 voters after the restore")
		g.Expect(svcErr).NotTo(HaveOccurred(), "the client Service exists once restored")
		restored = nc
	}, 8*time.Minute, pollEvery).Should(Succeed())
	Expect(sawRestoring).To(BeTrue(), "the restore was seen in progress")
	r := restored.Status.Restore
	AddReportEntry(fmt.Sprintf("restore into a new cluster: %s restored at Raft index %d; Restored and 3 voters %s after kubectl bao restore",
		r.Source, r.RaftIndex, time.Since(started).Round(time.Second)))
	GinkgoWriter.Printf("status.restore: %+v\n", *r)
	Expect(r.Source).To(Equal(receipt.Location))
	Expect(r.SHA256).To(Equal(receipt.SHA256))
	Expect(r.RaftIndex).To(Equal(receipt.RaftIndex), "the restored index is the receipt's")
	Expect(restored.Status.OperationLock).To(BeNil())
	Expect(eventReasonsIn(ctx, snapNS)).To(ContainElements("RestoreStarted", "SnapshotRestored", "RestoreCompleted"))

	By("the new cluster holds exactly the snapshot's data: every write before it, by value, none after")
	v := viewOf(ctx, snapNS, into, 3)
	members := []string{into + "-0", into + "-1", into + "-2"}
	val, found := v.read(ctx, members[0], "restore-check", "value")
	Expect(found).To(BeTrue())
	Expect(val).To(Equal(restoreCheck))
	for i, a := range before {
		m := members[i%len(members)]
		key := strings.TrimPrefix(a.key, "secret/data/")
		got, found := v.read(ctx, m, key, "v")
		Expect(found).To(BeTrue(), "%s, acknowledged at %s before the snapshot, through %s", key, a.at.Format(time.RFC3339Nano), m)
		Expect(got).To(Equal(a.value), key)
	}
	for _, a := range later {
		_, found := v.read(ctx, members[0], strings.TrimPrefix(a.key, "secret/data/"), "v")
		Expect(found).To(BeFalse(), "%s was acknowledged at %s, after the snapshot", a.key, a.at.Format(time.RFC3339Nano))
	}
	_, found = v.read(ctx, members[1], "after-snapshot", "value")
	Expect(found).To(BeFalse())
	GinkgoWriter.Printf("restored cluster: %d writes from before the snapshot read back by value, %d from after it absent\n", len(before), len(later))

	By("its identity is its own: the source's keeps working too")
	Expect(tc.get(ctx, Default).Status.Phase).To(Equal(baov1.PhaseRunning))
	tc.writeKV(ctx, "source-still-serves", "yes")
}
