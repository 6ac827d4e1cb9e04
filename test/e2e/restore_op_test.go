//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	mathrand "math/rand/v2"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
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
	// A random-time operator kill while the new cluster restores (issue 24: each
	// operation survives one on the rig): its steps are persisted before they are
	// taken, and the new operator goes on from status.
	delay := time.Duration(mathrand.Int64N(int64(15 * time.Second)))
	time.Sleep(delay)
	took := killOperator(ctx)
	GinkgoWriter.Printf("operator killed %s after kubectl bao restore; a new one led after %s\n", delay.Round(time.Millisecond), took.Round(time.Millisecond))
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
	AddReportEntry(fmt.Sprintf("restore into a new cluster: %s restored at Raft index %d; Restored and 3 voters %s after kubectl bao restore (operator killed %s after it)",
		r.Source, r.RaftIndex, time.Since(started).Round(time.Second), delay.Round(time.Millisecond)))
	GinkgoWriter.Printf("status.restore: %+v\n", *r)
	Expect(r.Source).To(Equal(receipt.Location))
	Expect(r.SHA256).To(Equal(receipt.SHA256))
	Expect(r.RaftIndex).To(Equal(receipt.RaftIndex), "the restored index is the receipt's")
	Expect(receipt.Canary).NotTo(BeEmpty(), "the snapshot Job wrote the restore canary before the snapshot")
	Expect(r.Canary).To(Equal(receipt.Canary), "the restore read the canary back from the restored data")
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
	// Running follows autopilot's verdict of every voter (issue 39): read until a pass
	// wrote it after the restore's load on the rig settled.
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning), c.Status.Message)
	}, 30*time.Second, pollEvery).Should(Succeed())
	tc.writeKV(ctx, "source-still-serves", "yes")

	// The rig's resources go to the specs after this one.
	Expect(k8s.Delete(ctx, restored)).To(Succeed())
}

// restoreDrills is the spec of issue 24's restore drills, on the snapshot spec's
// cluster and S3 server, while the cluster serves: a drill on a schedule that passes
// and leaves nothing behind, then one of a corrupted object that fails and alerts.
func restoreDrills(ctx context.Context, tc *testCluster, cl *minio.Client) {
	GinkgoHelper()
	const drill = name + "-drill"
	drillGone := func(g Gomega) {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: drill}, &baov1.OpenBaoCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the drill cluster is deleted: %v", err)
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(k8s.List(ctx, pvcs, client.InNamespace(snapNS), client.MatchingLabels{workload.LabelCluster: drill})).To(Succeed())
		g.Expect(pvcs.Items).To(BeEmpty(), "its volume claims are deleted")
		err = k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: drill + "-seal"}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "its copy of the seal key is deleted: %v", err)
	}
	obs := tc.observe(ctx)
	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Snapshots.Verify = &baov1.SnapshotVerifySpec{Schedule: "* * * * *"}
	})
	receipt := tc.get(ctx, Default).Status.Snapshots.Taken[0]
	killed := killOperatorOnce(ctx, "the drill started", func(g Gomega) {
		d := tc.get(ctx, g).Status.Snapshots.Drills
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Current).NotTo(BeNil())
	}, 20*time.Second)

	By("a scheduled drill restores the newest snapshot into " + drill + ", passes, and deletes it")
	var sawDrill bool
	var passed *baov1.DrillResult
	Eventually(func(g Gomega) {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: drill}, &baov1.OpenBaoCluster{}); err == nil {
			sawDrill = true
		}
		d := tc.get(ctx, g).Status.Snapshots.Drills
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Last).NotTo(BeNil(), "no drill ended yet: %+v", d)
		g.Expect(d.Current).To(BeNil())
		passed = d.Last
	}, 4*time.Minute, pollEvery).Should(Succeed())
	Expect(passed.Outcome).To(Equal(baov1.DrillPassed), passed.Message)
	Expect(passed.Snapshot).To(Equal(receipt.Location), "the newest verified snapshot")
	Expect(passed.RaftIndex).To(Equal(receipt.RaftIndex))
	Expect(passed.Message).To(ContainSubstring(fmt.Sprintf("restore canary %q read back", receipt.Canary)), "the drill read back the canary written before the snapshot")
	Expect(sawDrill).To(BeTrue(), "the drill cluster existed while the drill ran")
	killed()
	Eventually(drillGone, 30*time.Second, pollEvery).Should(Succeed())
	Expect(tc.get(ctx, Default).Status.Snapshots.Drills.LastPassedAt).NotTo(BeNil())
	GinkgoWriter.Printf("drill passed: %s\n", passed.Message)
	AddReportEntry("restore drill: " + passed.Message)

	By("the object corrupted in the bucket: the next drill fails on its checksum")
	key := strings.TrimPrefix(receipt.Location, "s3://"+snapBucket+"/")
	junk := []byte(strings.Repeat("not a snapshot ", 64))
	_, err := cl.PutObject(ctx, snapBucket, key, bytes.NewReader(junk), int64(len(junk)), minio.PutObjectOptions{})
	Expect(err).NotTo(HaveOccurred())
	var failed *baov1.DrillResult
	Eventually(func(g Gomega) {
		d := tc.get(ctx, g).Status.Snapshots.Drills
		g.Expect(d.Current).To(BeNil())
		g.Expect(d.Last).NotTo(BeNil())
		g.Expect(d.Last.ID).NotTo(Equal(passed.ID), "a drill after the corruption ended")
		failed = d.Last
	}, 4*time.Minute, pollEvery).Should(Succeed())
	failedAt := time.Now()
	Expect(failed.Outcome).To(Equal(baov1.DrillFailed), failed.Message)
	Expect(failed.Message).To(ContainSubstring("not " + receipt.SHA256 + " as its receipt says"))
	Eventually(drillGone, 30*time.Second, pollEvery).Should(Succeed())
	Expect(eventReasonsIn(ctx, snapNS)).To(ContainElements("RestoreDrillStarted", "RestoreDrillPassed", "RestoreDrillFailed"))
	GinkgoWriter.Printf("drill failed: %s\n", failed.Message)

	By("no further drills; the failure stays in status (and its alert) until a drill passes")
	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.Verify = nil })
	Eventually(func(g Gomega) {
		g.Expect(tc.get(ctx, g).Status.Snapshots.Drills.Current).To(BeNil())
		drillGone(g)
	}, 2*time.Minute, pollEvery).Should(Succeed(), "a drill that started before the schedule was removed ends")
	obs.endWindow()
	res := obs.finish(ctx)
	res.report("two restore drills beside the serving cluster")
	res.expectNoLoss()
	res.expectElections(0, "")
	// The failure's window: the series says 1 from the failed drill on.
	time.Sleep(time.Until(failedAt.Add(30 * time.Second)))
	recordScenario(scenarioDrillFailed, snapNS, failedAt, time.Now())
	Expect(tc.get(ctx, Default).Status.Snapshots.Drills.Last.Outcome).To(Equal(baov1.DrillFailed))
}

// rehearseUpgrades is the spec of issue 24's rehearsals, on the snapshot spec's
// cluster: an upgrade rehearsed on a copy that passes and lets the real upgrade go
// (under the observer: one election, no lost write), then one whose copy cannot
// reach the target (an image the rig does not have) that fails and holds the real
// upgrade with nothing of the cluster changed.
func rehearseUpgrades(ctx context.Context, tc *testCluster) {
	GinkgoHelper()
	const copyName = name + "-rehearsal"
	copyGone := func(g Gomega) {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: copyName}, &baov1.OpenBaoCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the copy is deleted: %v", err)
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(k8s.List(ctx, pvcs, client.InNamespace(snapNS), client.MatchingLabels{workload.LabelCluster: copyName})).To(Succeed())
		g.Expect(pvcs.Items).To(BeEmpty(), "its volume claims are deleted")
	}
	from := tc.get(ctx, Default).Status.CurrentVersion
	// A fresh snapshot to rehearse on: the drill spec before this one corrupted the
	// newest object on purpose (a rehearsal from it fails on its checksum, which is
	// right, and not what this spec rehearses first).
	kubectlBao(ctx, "snapshot", name, "-n", snapNS, "--wait")
	obs := tc.observe(ctx)
	uids := tc.podUIDs(ctx)
	By("kubectl bao rehearse --to 2.4.1 --wait: rehearsed on " + copyName + ", nothing of the cluster changed")
	obs.beginWindow()
	var sawCopy bool
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(pollEvery):
			}
			if k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: copyName}, &baov1.OpenBaoCluster{}) == nil {
				sawCopy = true
				return
			}
		}
	}()
	killed := killOperatorOnce(ctx, "the rehearsal started", func(g Gomega) {
		r := tc.get(ctx, g).Status.Rehearsal
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.ID).NotTo(BeEmpty())
	}, 30*time.Second)
	out, stderr, err := runKubectlBao(ctx, "rehearse", name, "-n", snapNS, "--to", "2.4.1", "--wait", "--timeout", "10m", "-o", "json")
	close(stop)
	<-done
	killed()
	Expect(err).NotTo(HaveOccurred(), "kubectl bao rehearse: %s%s", out, stderr)
	var res struct {
		Value     string                 `json:"value"`
		Rehearsal *baov1.RehearsalStatus `json:"rehearsal"`
	}
	Expect(json.Unmarshal([]byte(out), &res)).To(Succeed(), out)
	Expect(sawCopy).To(BeTrue(), "the copy existed while the rehearsal ran")
	rehearsal := res.Rehearsal
	Expect(rehearsal).NotTo(BeNil(), out)
	Expect(rehearsal.Request).To(Equal(res.Value))
	Expect(rehearsal.Result.Outcome).To(Equal(baov1.DrillPassed), rehearsal.Result.Message)
	GinkgoWriter.Printf("rehearsal passed: %s\n", rehearsal.Result.Message)
	AddReportEntry("rehearsal: " + rehearsal.Result.Message)
	rehearsed := snapshot.FindReceipt(&tc.get(ctx, Default).Status, rehearsal.SHA256)
	Expect(rehearsed).NotTo(BeNil())
	Expect(rehearsed.Canary).NotTo(BeEmpty(), "the rehearsed snapshot holds a restore canary")
	Expect(rehearsal.Result.Message).To(ContainSubstring(fmt.Sprintf("the restore canary %q read back again after the upgrade", rehearsed.Canary)),
		"the copy read the snapshot's canary after its upgrade to the target")
	Expect(tc.podUIDs(ctx)).To(Equal(uids), "no member replaced by the rehearsal")
	Expect(templateImage(ctx, Default)).To(HaveSuffix(":"+from), "the pod template is untouched by the rehearsal")
	c := tc.get(ctx, Default)
	Expect(c.Status.Upgrade).To(BeNil(), "the rehearsal started no upgrade")
	Expect(c.Status.OperationLock).To(BeNil(), "the rehearsal released the lock")
	Eventually(copyGone, 30*time.Second, pollEvery).Should(Succeed())

	By("a version change with rehearsal Required counts the rehearsal that passed: no second copy")
	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.Rehearsal = baov1.RehearsalRequired
		c.Spec.Version = "2.4.1"
	})
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.Upgrade).NotTo(BeNil())
		g.Expect(c.Status.Upgrade.Plan).NotTo(BeNil())
		var pc *baov1.Precheck
		for i := range c.Status.Upgrade.Plan.Prechecks {
			if c.Status.Upgrade.Plan.Prechecks[i].Name == snapshot.PrecheckRehearsal {
				pc = &c.Status.Upgrade.Plan.Prechecks[i]
			}
		}
		g.Expect(pc).NotTo(BeNil())
		g.Expect(pc.Result).To(Equal(baov1.PrecheckPassed), pc.Message)
		g.Expect(pc.Message).To(ContainSubstring("rehearsed on request (" + baov1.AnnotationRehearse + "=" + res.Value))
	}, 2*time.Minute, pollEvery).Should(Succeed())

	By("the real upgrade goes on after the rehearsal")
	tc.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
	Expect(tc.get(ctx, Default).Status.Upgrade).To(BeNil())
	obs.endWindow()
	result := obs.finish(ctx)
	result.report("rolling upgrade rehearsed on a copy first", "rehearsal: "+rehearsal.Result.Message)
	result.expectClean(tc, 1, "2.4.1")
	Expect(eventReasonsIn(ctx, snapNS)).To(ContainElements("RehearsalRequested", "RehearsalStarted", "RehearsalPassed"))

	By("a rehearsal whose copy cannot reach the target fails and holds the real upgrade, nothing changed")
	uids = tc.podUIDs(ctx)
	stepTimeout := tc.get(ctx, Default).Spec.Upgrade.Rolling.StepTimeout
	tc.update(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.RehearsalTimeout = ptrTo(baov1.Duration("3m"))
		// The copy takes the cluster's spec.upgrade: its first step fails after 30 s
		// rather than at the rehearsal's timeout.
		c.Spec.Upgrade.Rolling.StepTimeout = baov1.DurationOf(30 * time.Second)
		// 2.4.99: a version the rig has no image of: the copy's first replaced member
		// never starts.
		c.Spec.Version = "2.4.99"
	})
	var held *baov1.OpenBaoCluster
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		Expect(tc.podUIDs(ctx)).To(Equal(uids), "no member of the cluster replaced: %s", c.Status.Message)
		g.Expect(c.Status.Upgrade).NotTo(BeNil())
		r := c.Status.Upgrade.Rehearsal
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.TargetVersion).To(Equal("2.4.99"))
		g.Expect(r.Step).To(Equal(baov1.RehearsalStepDone), "%s: %s", r.Step, r.WaitingFor)
		held = c
	}, 9*time.Minute, pollEvery).Should(Succeed())
	r := held.Status.Upgrade.Rehearsal
	Expect(r.Result.Outcome).To(Equal(baov1.DrillFailed))
	GinkgoWriter.Printf("rehearsal failed: %s\n", r.Result.Message)
	Expect(r.Result.Message).To(ContainSubstring("the copy's upgrade failed (StepTimeout)"), "the copy's own upgrade failed, and the verdict says how")
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		pc := upgrade.FirstUnpassedPrecheck(c.Status.Upgrade.Plan.Prechecks)
		g.Expect(pc).NotTo(BeNil())
		g.Expect(pc.Name).To(Equal("Rehearsal"))
		g.Expect(pc.Result).To(Equal(baov1.PrecheckFailed))
		g.Expect(pc.Message).To(ContainSubstring("kubectl bao retry"))
	}, time.Minute, pollEvery).Should(Succeed())
	Eventually(copyGone, time.Minute, pollEvery).Should(Succeed())
	Consistently(func(g Gomega) {
		g.Expect(tc.podUIDs(ctx)).To(Equal(uids))
		g.Expect(templateImage(ctx, g)).To(HaveSuffix(":2.4.1"))
		g.Expect(tc.get(ctx, g).Status.CurrentVersion).To(Equal("2.4.1"))
	}, 5*time.Second, pollEvery).Should(Succeed(), "the failed rehearsal holds the real upgrade")
	Expect(eventReasonsIn(ctx, snapNS)).To(ContainElement("RehearsalFailed"))

	By("back to 2.4.1: the held upgrade is cancelled")
	tc.update(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Version = "2.4.1"
		c.Spec.Upgrade.Rolling.StepTimeout = stepTimeout
	})
	Eventually(func(g Gomega) { g.Expect(tc.get(ctx, g).Status.Upgrade).To(BeNil()) }, 2*time.Minute, pollEvery).Should(Succeed())
}

// restoreInPlace is the spec of issue 24's in-place restore, on the snapshot spec's
// cluster and S3 server while it serves: a snapshot, writes after it, kubectl bao
// restore --in-place --wait with the operator killed at a random time while it runs.
// Every write acknowledged before the snapshot reads back by value, none of those
// acknowledged after it (and before the request) exists, every write acknowledged
// after the restore completed is kept, and no member is replaced.
func restoreInPlace(ctx context.Context, tc *testCluster) {
	GinkgoHelper()
	obs := tc.observe(ctx)
	time.Sleep(3 * time.Second) // writes before the snapshot
	requested := time.Now()
	obs.beginWindow()
	kubectlBao(ctx, "snapshot", name, "-n", snapNS, "--wait")
	receipt := tc.get(ctx, Default).Status.Snapshots.Taken[0]
	Expect(receipt.TakenAt).NotTo(BeNil())
	after := receipt.TakenAt.Add(time.Second) // TakenAt is to the second, set after the upload
	for time.Now().Before(after.Add(3 * time.Second)) {
		time.Sleep(pollEvery)
	}
	tc.writeKV(ctx, "after-inplace-snapshot", "replaced-by-the-restore")
	uids := tc.podUIDs(ctx)

	By("a request that names no receipt is refused before anything is written")
	_, stderr, err := runKubectlBao(ctx, "restore", name, "--in-place", "--sha256", strings.Repeat("e", 64), "-n", snapNS)
	Expect(err).To(HaveOccurred())
	Expect(stderr).To(ContainSubstring("no snapshot receipt of this cluster has sha256 " + strings.Repeat("e", 64)))
	Expect(tc.get(ctx, Default).Annotations).NotTo(HaveKey(baov1.AnnotationRestore), "nothing was written")

	By("kubectl bao restore --in-place --wait, the operator killed while it runs")
	askedAt := time.Now()
	done := kubectlBaoAsync(ctx, "restore", name, "--in-place", "--sha256", receipt.SHA256, "-n", snapNS, "--wait", "--timeout", "8m")
	delay := time.Duration(mathrand.Int64N(int64(10 * time.Second)))
	time.Sleep(delay)
	took := killOperator(ctx)
	GinkgoWriter.Printf("operator killed %s after the in-place restore was asked for; a new one led after %s\n", delay.Round(time.Millisecond), took.Round(time.Millisecond))
	var res kubectlBaoResult
	Eventually(done, 9*time.Minute).Should(Receive(&res))
	GinkgoWriter.Printf("kubectl bao restore --in-place: %s%s\n", res.out, res.stderr)
	Expect(res.err).NotTo(HaveOccurred(), "%s%s", res.out, res.stderr)
	Expect(res.out).To(ContainSubstring("Restored in place:"))
	c := tc.get(ctx, Default)
	r := c.Status.InPlaceRestore
	Expect(r).NotTo(BeNil())
	Expect(r.Step).To(Equal(baov1.RestoreStepDone), r.Failure)
	Expect(r.SHA256).To(Equal(receipt.SHA256))
	Expect(r.CompletedAt).NotTo(BeNil())
	Expect(receipt.Canary).NotTo(BeEmpty())
	Expect(r.Canary).To(Equal(receipt.Canary), "every member verified and the canary read back")
	Expect(c.Status.OperationLock).To(BeNil())
	cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionRestored))
	Expect(cond).NotTo(BeNil())
	Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
	Expect(eventReasonsIn(ctx, snapNS)).To(ContainElements("RestoreRequested", "RestoreStarted", "SnapshotRestored", "RestoreCompleted"))
	completed := r.CompletedAt.Add(time.Second) // to the second
	for time.Now().Before(completed.Add(3 * time.Second)) {
		time.Sleep(pollEvery) // writes after the restore
	}
	obs.endWindow()
	obs.allowReplaced(requested, completed, "the in-place restore replaces the writes made after the snapshot")
	// OpenBao applies a restore on the active node with its state lock held: it seals
	// its in-memory state, installs the snapshot through Raft and unseals again, and
	// requests wait meanwhile (6.0 s on the rig, the first run). The leader stays the
	// leader; it advertises itself again afterwards, with a new active time, which
	// the observer sees as a term of the same leader.
	fin := obs.finish(ctx).allowGap(10*time.Second, "the leader applies the snapshot with its state lock held: requests wait until it unsealed again")
	// Every follower installs the snapshot the leader's restore leaves in Raft and
	// then runs OpenBao's restore callback with its own state lock held (vault/raft.go,
	// raftSnapshotRestoreCallback(true, true), set on every member at unseal); its
	// sys/leader waits for that lock meanwhile (seen in CI: one follower, 6 reads
	// timed out in a row). When within the window each member does so is OpenBao's.
	for m := range uids {
		fin = fin.allowDown(m, askedAt, completed.Add(downGrace), "it applies the restored snapshot with its state lock held")
	}
	fin.report("an in-place restore, the operator killed while it ran", fmt.Sprintf("%s applied at Raft index %d; %s from the request to Done; write window (longest gap) %s; %d writes in the replaced span skipped by the read-back, operator killed %s after the request",
		r.Source, r.AppliedIndex, r.CompletedAt.Sub(askedAt).Round(time.Second), fin.longest.Round(time.Millisecond), fin.replaced, delay.Round(time.Millisecond)))
	fin.expectNoLoss()
	Expect(fin.elections).To(BeNumerically("<=", 1), "at most the leader's own new active time after it applied the snapshot: %s", fin.termsString())
	for _, l := range fin.leaders {
		Expect(l).To(Equal(fin.leaders[0]), "no other member took the lead: %s", fin.termsString())
	}
	Expect(tc.podUIDs(ctx)).To(Equal(uids), "no member was replaced: OpenBao restores into the running members")

	By("every write before the snapshot by value (the read-back above), none after it, every one after the restore")
	var lost, kept []ack
	for _, a := range obs.w.acks {
		switch {
		case a.at.After(after) && a.at.Before(askedAt):
			lost = append(lost, a)
		case a.at.After(completed):
			kept = append(kept, a)
		}
	}
	Expect(len(lost)).To(BeNumerically(">=", 5), "writes acknowledged between the snapshot and the request")
	Expect(len(kept)).To(BeNumerically(">=", 5), "writes acknowledged after the restore")
	tok, err := tc.login(ctx, token(ctx, tc.ns, appSA), "app")
	Expect(err).NotTo(HaveOccurred())
	for i, a := range lost {
		m := tc.memberList()[i%len(tc.memberList())]
		s, err := tc.client(m, tok).Logical().ReadWithContext(ctx, a.key)
		Expect(err).NotTo(HaveOccurred())
		Expect(s).To(BeNil(), "%s was acknowledged at %s, after the snapshot: the restore replaced it (read through %s)", a.key, a.at.Format(time.RFC3339Nano), m)
	}
	_, found := tc.readKV(ctx, tc.memberList()[0], "after-inplace-snapshot")
	Expect(found).To(BeFalse())
	GinkgoWriter.Printf("in-place restore: %d writes after the snapshot absent through every member, %d after the restore kept\n", len(lost), len(kept))
	tc.writeKV(ctx, "after-inplace-restore", "kept")
	v, found := tc.readKV(ctx, tc.memberList()[1], "after-inplace-restore")
	Expect(found).To(BeTrue())
	Expect(v).To(Equal("kept"))
}

// offlineAcrossBoundary is the spec of issue 24's way across a version boundary, on
// the snapshot spec's cluster (2.4.1, a pre-upgrade snapshot target): 2.6.0 is
// refused for a rolling upgrade (a member before 2.6 and one on 2.6.0 cannot forward
// requests to each other); with spec.upgrade.strategy Offline every member stops at
// once and starts on 2.6.0 from its own volume, the operator killed the moment the
// stop is recorded. Under the observer: every write
// acknowledged before, during and after reads back by value, each member is
// replaced once, one election onto 2.6.0, and the window in which no write was
// acknowledged is printed beside the one the operator measured.
func offlineAcrossBoundary(ctx context.Context, tc *testCluster) {
	GinkgoHelper()
	from := tc.get(ctx, Default).Status.CurrentVersion
	uids := tc.podUIDs(ctx)
	By("2.6.0 with the rolling strategy: refused before anything changes, naming Offline")
	tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.6.0" })
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.Upgrade).NotTo(BeNil())
		g.Expect(c.Status.Message).To(ContainSubstring("waits for precheck VersionCompatibility"))
		g.Expect(c.Status.Message).To(ContainSubstring("set spec.upgrade.strategy to Offline"))
	}, time.Minute, pollEvery).Should(Succeed())
	Expect(tc.podUIDs(ctx)).To(Equal(uids), "nothing restarted")
	tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = from })
	Eventually(func(g Gomega) { g.Expect(tc.get(ctx, g).Status.Upgrade).To(BeNil()) }, time.Minute, pollEvery).Should(Succeed())

	By("strategy Offline and 2.6.0: every member stops and starts on 2.6.0")
	obs := tc.observe(ctx)
	time.Sleep(3 * time.Second) // writes before the change
	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.Strategy = baov1.OfflineStrategy
		// The rehearsal spec before this one left Required (and a 3-minute timeout);
		// an offline rehearsal is tested by the table tests, not again here.
		c.Spec.Upgrade.Rehearsal = baov1.RehearsalDisabled
		c.Spec.Version = "2.6.0"
	})
	By("killing the operator the moment the stop is recorded, before or while the pods go")
	Eventually(func(g Gomega) {
		up := tc.get(ctx, g).Status.Upgrade
		g.Expect(up).NotTo(BeNil())
		g.Expect(up.Offline).NotTo(BeNil(), up.WaitingFor)
		g.Expect(up.Offline.StoppedAt).NotTo(BeNil())
	}, 4*time.Minute, 100*time.Millisecond).Should(Succeed())
	took := killOperator(ctx)
	GinkgoWriter.Printf("operator killed once the stop was recorded; a new one led after %s\n", took.Round(100*time.Millisecond))
	var window string
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		if up := c.Status.Upgrade; up != nil && up.Offline.Window() != "" {
			window = up.Offline.Window()
		}
		g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
		g.Expect(c.Status.CurrentVersion).To(Equal("2.6.0"))
	}, 8*time.Minute, pollEvery).Should(Succeed())
	obs.endWindow()
	completed := eventMessagesOf(ctx, snapNS, "UpgradeCompleted")
	Expect(completed).To(ContainElement(ContainSubstring("offline): no member answered for")), "the completion says the window: %v", completed)
	res := obs.finish(ctx).
		allowGap(2*time.Minute, "an offline upgrade stops every member at once: no write is acknowledged until the members, started one after another by "+
			"the StatefulSet controller (OrderedReady), elect a leader on the target; the spec prints the window beside the operator's (which ends when "+
			"the operator sees the leader, later here since it was killed)").
		allowFloorShare(0.1, "no member answers for a good part of the window, by design")
	res.report("offline upgrade across the 2.6 boundary, the operator killed once the stop was recorded", "operator's window: "+window,
		"completed: "+strings.Join(completed, " / "), "new operator after "+took.Round(100*time.Millisecond).String())
	GinkgoWriter.Printf("offline upgrade: the operator measured a window of %s; the longest write gap was %s\n", window, res.longest.Round(time.Millisecond))
	AddReportEntry("offline window", fmt.Sprintf("operator %s, longest write gap %s", window, res.longest.Round(time.Millisecond)))
	res.expectClean(tc, 1, "2.6.0")
}

// killOperatorOnce kills the operator once, in the background, at a random time
// within spread after cond first holds (issue 24: each operation survives a kill at
// a random time on the rig). The returned func waits for the kill and says what
// happened.
func killOperatorOnce(ctx context.Context, what string, cond func(Gomega), spread time.Duration) func() string {
	done := make(chan string, 1)
	go func() {
		defer GinkgoRecover()
		Eventually(cond, 5*time.Minute, 100*time.Millisecond).Should(Succeed(), "waiting to kill the operator: "+what)
		delay := time.Duration(mathrand.Int64N(int64(spread)))
		time.Sleep(delay)
		took := killOperator(ctx)
		done <- fmt.Sprintf("operator killed %s after %s; a new one led after %s", delay.Round(time.Millisecond), what, took.Round(100*time.Millisecond))
	}()
	return func() string {
		GinkgoHelper()
		var said string
		Eventually(done, 6*time.Minute).Should(Receive(&said))
		GinkgoWriter.Println(said)
		AddReportEntry(said)
		return said
	}
}
