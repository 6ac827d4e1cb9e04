//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// tenantConfigMapWriter is a ServiceAccount of the e2e namespace that may do one
// thing: read and patch ConfigMaps (issue 38: an application's leader-election or
// reloader account).
const tenantConfigMapWriter = "tenant-configmaps"

// asConfigMapWriter creates tenantConfigMapWriter with its Role in namespace, and
// returns a client that acts as it.
func asConfigMapWriter(ctx context.Context, namespace string) client.Client {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tenantConfigMapWriter}})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tenantConfigMapWriter},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}}})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tenantConfigMapWriter},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tenantConfigMapWriter},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: tenantConfigMapWriter}}})).To(Succeed())
	cfg := rest.CopyConfig(restCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: workload.ServiceAccountSubject(namespace, tenantConfigMapWriter)}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// forgeMailbox writes, as the tenant, what issue 38 found driving the executor: the
// remove-peer of bao-2 for an invented operation with its own connection flags, a
// step-down of the leader in the current request format, and a forged failed answer.
// It returns the keys written.
func forgeMailbox(ctx context.Context, tenant client.Client, namespace, cluster, leader string) []string {
	GinkgoHelper()
	members := fmt.Sprintf("https://%s-0.%s-internal.%s.svc:8200", cluster, cluster, namespace)
	forged := map[string]any{
		"request.zz1": `{"operation":"zz1","args":["remove-peer","--member","` + cluster + `-2","--members","` + members +
			`","--ca-file","/var/run/secrets/baokeeper-ca/ca.crt","--token-file","/var/run/secrets/baokeeper/token","--timeout","8760h"]}`,
		"request." + cluster + "-stepdown-zz2-0-1": `{"operation":"zz2","step":"stepdown","member":"` + leader + `","at":"` + time.Now().UTC().Format(time.RFC3339) + `","deadline":120000000000}`,
		"result." + cluster + "-promote-zz2-1-1":   `{"operation":"zz2","exitCode":1,"executor":"` + cluster + `-executor-zz2-x"}`,
	}
	patch, err := json.Marshal(map[string]any{"data": forged})
	Expect(err).NotTo(HaveOccurred())
	mailbox := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: cluster + "-executor"}}
	Expect(tenant.Patch(ctx, mailbox, client.RawPatch(types.MergePatchType, patch))).To(Succeed(), "the tenant may patch the mailbox, as in the issue")
	var keys []string
	for k := range forged {
		keys = append(keys, k)
	}
	return keys
}

// expectRefused waits until the operator refused the forged keys of the cluster's
// mailbox (removed, counted in status, the InputRefused condition, an event), and
// checks that no executor was started for them.
func expectRefused(ctx context.Context, namespace, cluster string, keys []string, before int64) {
	GinkgoHelper()
	key := client.ObjectKey{Namespace: namespace, Name: cluster}
	Eventually(func(g Gomega) {
		c := &baov1.OpenBaoCluster{}
		g.Expect(k8s.Get(ctx, key, c)).To(Succeed())
		g.Expect(c.Status.RefusedInput).NotTo(BeNil())
		g.Expect(c.Status.RefusedInput.Count - before).To(BeNumerically(">=", len(keys)))
		cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionInputRefused))
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster + "-executor"}, cm)).To(Succeed())
		for _, k := range keys {
			g.Expect(cm.Data).NotTo(HaveKey(k), "the forged entry is removed")
		}
		evs := &eventsv1.EventList{}
		g.Expect(k8s.List(ctx, evs, client.InNamespace(namespace))).To(Succeed())
		var refused []string
		for _, e := range evs.Items {
			if e.Regarding.Name == cluster && e.Reason == string(baov1.ReasonMailboxEntryRefused) {
				refused = append(refused, e.Note)
			}
		}
		g.Expect(refused).NotTo(BeEmpty())
		GinkgoWriter.Printf("refused: %s\n", refused[len(refused)-1])
	}, time.Minute, pollEvery).Should(Succeed())
	jobs := &batchv1.JobList{}
	Expect(k8s.List(ctx, jobs, client.InNamespace(namespace))).To(Succeed())
	for _, j := range jobs.Items {
		Expect(j.Labels[executorjob.LabelOperation]).NotTo(BeElementOf("zz1", "zz2"), "bug: Job %s runs for an operation only the mailbox named", j.Name)
		Expect(j.Name).NotTo(ContainSubstring("zz"), "bug: Job %s", j.Name)
	}
}

// refusedCount is the cluster's status.refusedInput.count.
func refusedCount(ctx context.Context, namespace, cluster string) int64 {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, c)).To(Succeed())
	if c.Status.RefusedInput == nil {
		return 0
	}
	return c.Status.RefusedInput.Count
}

// voters is autopilot's voters, sorted.
func votersOf(ctx context.Context, caPEM []byte) string {
	GinkgoHelper()
	v := slices.Clone(autopilot(ctx, caPEM).Voters)
	slices.Sort(v)
	return strings.Join(v, ",")
}

// operatorRestarts sums the restarts of the operator's pods.
func operatorRestarts(ctx context.Context) int32 {
	GinkgoHelper()
	pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var n int32
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
	}
	return n
}

// floodConfigMaps creates n ConfigMaps of 1 MB each in namespace, labelled as
// baokeeper's (what the operator's cache selects), as any tenant who may create
// ConfigMaps can; it returns a function that deletes them.
func floodConfigMaps(ctx context.Context, namespace string, n int) func(context.Context) {
	GinkgoHelper()
	blob := strings.Repeat("x", 1000*1000)
	for i := range n {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("flood-%03d", i),
				Labels: map[string]string{workload.LabelManagedBy: workload.ManagedByValue, workload.LabelCluster: name}},
			Data: map[string]string{"blob": blob},
		}
		Expect(k8s.Create(ctx, cm)).To(Succeed())
	}
	return func(ctx context.Context) {
		for i := range n {
			_ = k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("flood-%03d", i)}})
		}
	}
}

// rewriteRolesAsExecutor logs in with a token of the cluster's executor account (what
// a tenant who may request that account's tokens, or run a pod as it, holds) and
// tries to widen the JWT roles the way issue 38 found possible: another policy,
// year-long tokens, another namespace's account, a second audience. OpenBao refuses
// each (the executor policy pins every parameter); the role still logs in afterwards.
func rewriteRolesAsExecutor(ctx context.Context, caPEM []byte, namespace, cluster, audience string) {
	GinkgoHelper()
	execSA := workload.NamesFor(&baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}).ExecutorServiceAccount()
	jwt := tokenFor(ctx, namespace, execSA, audience)
	c := serviceClient(ctx, caPEM, cluster, login(ctx, caPEM, jwt, workload.ExecutorRole))
	role := "auth/" + workload.AuthMount + "/role/" + workload.ExecutorRole
	subject := workload.ServiceAccountSubject(namespace, execSA)
	base := workload.ExecutorRoleData(subject, audience)
	for what, change := range map[string]map[string]any{
		"another policy":                     {"token_policies": "root"},
		"a second policy":                    {"token_policies": workload.ExecutorPolicy + ",default"},
		"year-long tokens":                   {"token_ttl": "8760h", "token_max_ttl": "8760h"},
		"another namespace's account":        {"bound_subject": workload.ServiceAccountSubject("elsewhere", execSA)},
		"a second audience":                  {"bound_audiences": audience + ",baokeeper"},
		"a parameter baokeeper never writes": {"bound_claims": map[string]any{"x": "y"}},
	} {
		data := map[string]any{}
		for k, v := range base {
			data[k] = v
		}
		for k, v := range change {
			data[k] = v
		}
		_, err := c.Logical().WriteWithContext(ctx, role, data)
		Expect(err).To(HaveOccurred(), "an executor token rewrote its role with %s", what)
		expectDenied(err)
	}
	By("the role still logs the executor in, with its own policy")
	s, err := serviceClient(ctx, caPEM, cluster, "").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login", map[string]any{"role": workload.ExecutorRole, "jwt": jwt})
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Auth.Policies).To(ContainElement(workload.ExecutorPolicy))
	Expect(s.Auth.Policies).NotTo(ContainElement("root"))
}

// borrowIdentity creates, as a cluster author, a cluster that says it restores a
// snapshot of cluster (one cluster never listed) to get its seal key and executor
// identity. It returns the new cluster's name.
func borrowIdentity(ctx context.Context, namespace, cluster string) string {
	GinkgoHelper()
	thief := "thief"
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: thief},
		Spec: baov1.OpenBaoClusterSpec{Version: "2.4.0", Bootstrap: &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
			S3:            baov1.S3Target{Endpoint: "https://s3.invalid", Bucket: "nothing", CredentialsSecretRef: corev1.LocalObjectReference{Name: "none"}},
			Key:           "e2e/" + cluster + "/never-taken.snap",
			SHA256:        strings.Repeat("0", 64),
			SourceCluster: cluster,
		}}},
	}
	Expect(k8s.Create(ctx, c)).To(Succeed())
	return thief
}

// expectIdentityKept waits until the borrowing cluster is refused with
// SealKeyRefused, and checks that it got no seal key, no members, and no pod under
// another cluster's executor account.
func expectIdentityKept(ctx context.Context, namespace, thief, cluster string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := &baov1.OpenBaoCluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: thief}, c)).To(Succeed())
		reasons := []string{}
		for _, cond := range c.Status.Conditions {
			reasons = append(reasons, cond.Reason)
		}
		g.Expect(reasons).To(ContainElement(string(baov1.ReasonSealKeyRefused)), "status: %s", c.Status.Message)
		g.Expect(c.Status.Message).To(ContainSubstring(cluster))
	}, time.Minute, pollEvery).Should(Succeed())
	for _, obj := range []client.Object{&corev1.Secret{}, &appsv1.StatefulSet{}} {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: thief + "-seal"}, obj)
		if _, ok := obj.(*appsv1.StatefulSet); ok {
			err = k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: thief}, obj)
		}
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T of %s: %v", obj, thief, err)
	}
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	execSA := workload.NamesFor(&baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}).ExecutorServiceAccount()
	for _, p := range pods.Items {
		if p.Spec.ServiceAccountName == execSA {
			Expect(p.Labels).To(HaveKeyWithValue(workload.LabelCluster, cluster), "pod %s runs as %s for another cluster", p.Name, execSA)
		}
	}
}

// rejoinBound is how soon a member removed from Raft by hand is a voter again:
// scaling.RejoinAfter, a restart on a fresh volume and its join, then
// scaling.PromoteAfter as a healthy non-voter, with room for the rig.
const rejoinBound = 3 * time.Minute

// removeFromRaftByHand removes member from the Raft configuration the way a person
// with an executor's token would (bao operator raft remove-peer), leaving its pod
// running.
func removeFromRaftByHand(ctx context.Context, caPEM []byte, member string) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	execSA := workload.NamesFor(c).ExecutorServiceAccount()
	tok := login(ctx, caPEM, tokenFor(ctx, ns, execSA, c.Status.JWTAudience), workload.ExecutorRole)
	_, err := serviceClient(ctx, caPEM, workload.NamesFor(c).ActiveService(), tok).Logical().WriteWithContext(ctx,
		"sys/storage/raft/remove-peer", map[string]any{"server_id": member})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() string { return votersOf(ctx, caPEM) }, 30*time.Second, pollEvery).ShouldNot(ContainSubstring(member))
}

// eventMessages are the notes of the cluster's events of reason.
func eventMessages(ctx context.Context, namespace, cluster, reason string) []string {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	Expect(k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == cluster && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}
