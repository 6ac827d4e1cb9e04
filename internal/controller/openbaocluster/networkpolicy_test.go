package openbaocluster_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

var _ = Describe("The members' NetworkPolicy (spec.networkPolicy, issue 38)", func() {
	var ns string
	ctx := context.Background()
	BeforeEach(func() { ns = newNamespace(ctx) })

	enabled := func(c *baov1.OpenBaoCluster) { c.Spec.NetworkPolicy.Enabled = true }

	It("is kept while enabled, follows spec.networkPolicy.clients, and is deleted once disabled; another's of the same name is left alone", func() {
		c := newCluster(ns, "bao", enabled)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		np := &networkingv1.NetworkPolicy{}
		Eventually(func() error { return k8s.Get(ctx, key(ns, "bao"), np) }, timeout, interval).Should(Succeed())
		Expect(metav1.IsControlledBy(np, getCluster(ctx, c))).To(BeTrue())
		Expect(np.Spec.PodSelector.MatchLabels).To(Equal(workload.MemberLabels(c)))
		Expect(np.Spec.Ingress).To(HaveLen(2), "the cluster port, then the API port")
		Expect(np.Spec.Ingress[1].From).To(ContainElement(networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": operatorSA.Namespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{workload.LabelName: workload.OperatorName}},
		}), "the operator's pods reach the API port")

		By("a peer added to spec.networkPolicy.clients reaches the policy")
		prometheus := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}
		updateCluster(ctx, c, func(c *baov1.OpenBaoCluster) {
			c.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{prometheus}
		})
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, "bao"), np)).To(Succeed())
			g.Expect(np.Spec.Ingress[1].From).To(ContainElement(prometheus))
		}, timeout, interval).Should(Succeed())

		By("a hand edit that admits everyone is put back")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		Expect(k8s.Update(ctx, np)).To(Succeed())
		updateCluster(ctx, c, func(c *baov1.OpenBaoCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations["example.com/nudge"] = "1"
		})
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, "bao"), np)).To(Succeed())
			g.Expect(np.Spec.Ingress).To(HaveLen(2))
		}, timeout, interval).Should(Succeed())

		By("disabled: the policy goes")
		updateCluster(ctx, c, func(c *baov1.OpenBaoCluster) { c.Spec.NetworkPolicy.Enabled = false })
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key(ns, "bao"), &networkingv1.NetworkPolicy{})) }, timeout, interval).Should(BeTrue())

		By("a NetworkPolicy of the same name that the cluster does not control stays")
		theirs := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bao",
			Labels: map[string]string{workload.LabelManagedBy: workload.ManagedByValue}}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		updateCluster(ctx, c, func(c *baov1.OpenBaoCluster) { c.Annotations["example.com/nudge"] = "2" })
		Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &networkingv1.NetworkPolicy{}) }, 2*time.Second, interval).Should(Succeed())
	})

	It("refuses to take over another application's NetworkPolicy of the name, touching nothing", func() {
		theirs := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bao"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		before := snapshotObjects(ctx, []client.Object{theirs})
		c := newCluster(ns, "bao", enabled)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		expectRefused(ctx, c, baov1.ReasonNameConflict, "NetworkPolicy bao (not created by baokeeper)")
		expectUnchanged(ctx, c, before)
	})
})
