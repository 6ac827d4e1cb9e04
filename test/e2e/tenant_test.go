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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
