//go:build e2e

package e2e

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const upNS = "e2e-upgrade"

var _ = Describe("A rolling upgrade of a 3-member cluster from 2.4.0 to 2.4.1", Ordered, func() {
	var tc *testCluster

	BeforeAll(func(ctx SpecContext) {
		tc = newTestCluster(ctx, upNS, 3)
	}, NodeTimeout(bringUp+time.Minute))

	It("keeps every acknowledged write, changes leader exactly once, onto the new version", func(ctx SpecContext) {
		obs := tc.observe(ctx)
		By("changing spec.version to 2.4.1")
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		tc.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rolling upgrade 3 members")
		res.expectClean(tc, 1, "2.4.1")
		tc.expectAllOn(ctx, "2.4.1")
	}, SpecTimeout(8*time.Minute))

	It("refuses a downgrade and changes nothing", func(ctx SpecContext) {
		before := podUIDs(ctx)
		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.0" })
		Eventually(func(g Gomega) {
			c := getUp(ctx, g)
			cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionSpecValid))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal("DowngradeRefused"))
			g.Expect(c.Status.Message).To(ContainSubstring("older than the running version 2.4.1"))
			g.Expect(c.Status.Upgrade).To(BeNil())
		}, time.Minute, pollEvery).Should(Succeed())
		Consistently(func() map[string]types.UID { return podUIDs(ctx) }, 5*time.Second, pollEvery).Should(Equal(before))
		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(getUp(ctx, g).Status.Conditions, string(baov1.ConditionSpecValid))
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonSpecAccepted)))
		}, time.Minute, pollEvery).Should(Succeed())
	}, SpecTimeout(3*time.Minute))

	It("holds a paused upgrade before the first member and finishes it when resumed", func(ctx SpecContext) {
		before := podUIDs(ctx)
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Paused = true; c.Spec.Version = "2.5.0" })
		Eventually(func(g Gomega) {
			c := getUp(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Message).To(ContainSubstring("paused by spec.upgrade.paused before bao-"))
			cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionUpgradePaused))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		}, 2*time.Minute, pollEvery).Should(Succeed())
		Consistently(func() map[string]types.UID { return podUIDs(ctx) }, 5*time.Second, pollEvery).Should(Equal(before), "no member replaced while paused")

		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Paused = false })
		tc.waitUpgraded(ctx, "2.5.0", 5*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("paused, then resumed upgrade 3 members, 2.4.1 to 2.5.0")
		res.expectClean(tc, 1, "2.5.0")
		tc.expectAllOn(ctx, "2.5.0")
	}, SpecTimeout(8*time.Minute))
})

func getUp(ctx context.Context, g Gomega) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c)).To(Succeed())
	return c
}

func setSpec(ctx context.Context, mutate func(*baov1.OpenBaoCluster)) {
	GinkgoHelper()
	Eventually(func() error {
		c := &baov1.OpenBaoCluster{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c); err != nil {
			return err
		}
		mutate(c)
		return k8s.Update(ctx, c)
	}, 30*time.Second, pollEvery).Should(Succeed())
}

func podUIDs(ctx context.Context) map[string]types.UID {
	GinkgoHelper()
	out := map[string]types.UID{}
	for _, m := range []string{"bao-0", "bao-1", "bao-2"} {
		p, err := cs.CoreV1().Pods(upNS).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		out[m] = p.UID
	}
	return out
}

var _ = Describe("A member that never becomes ready", Ordered, func() {
	const failNS = "e2e-fail"
	var tc *testCluster

	BeforeAll(func(ctx SpecContext) {
		tc = newTestCluster(ctx, failNS, 3)
	}, NodeTimeout(bringUp+time.Minute))
	AfterAll(func(ctx SpecContext) { deleteNamespace(ctx, failNS) }, NodeTimeout(3*time.Minute))

	It("fails after stepTimeout naming the member and those not started, and a retry after the fix completes", func(ctx SpecContext) {
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Version = "2.4.1"
			c.Spec.Image = flakyImage
			c.Spec.Upgrade.Rolling.StepTimeout = baov1.DurationOf(60 * time.Second)
		})

		var failure *baov1.UpgradeFailure
		var plan []string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Failure).NotTo(BeNil(), "%s", c.Status.Message)
			failure, plan = c.Status.Upgrade.Failure, c.Status.Upgrade.Plan.Pods
			g.Expect(c.Status.Message).To(ContainSubstring("baokeeper.dev/retry"))
		}, 3*time.Minute, pollEvery).Should(Succeed())
		Expect(failure.Reason).To(Equal("StepTimeout"))
		Expect(failure.Pod).To(Equal(plan[0]), "the first member of the plan is the one that never became ready")
		Expect(failure.Message).To(ContainSubstring(plan[0] + " did not finish within 1m0s"))
		Expect(failure.Message).To(ContainSubstring("not started: " + plan[1] + ", " + plan[2]))
		Consistently(func(g Gomega) { g.Expect(tc.get(ctx, g).Status.Upgrade.Failure).NotTo(BeNil()) }, 5*time.Second, pollEvery).
			Should(Succeed(), "a failed upgrade waits for a person")

		By("fixing the cause, restarting the crash-looping pod instead of waiting out its back-off, and retrying")
		Expect(os.WriteFile(fixMarker(), []byte("fixed"), 0o600)).To(Succeed())
		Expect(cs.CoreV1().Pods(failNS).Delete(ctx, failure.Pod, metav1.DeleteOptions{})).To(Succeed())
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[baov1.AnnotationRetry] = "1"
		})
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.4.1"))
			g.Expect(c.Status.Requests.Retry).To(Equal("1"))
		}, 5*time.Minute, pollEvery).Should(Succeed())
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("upgrade through a member that never became ready, failed, fixed and retried")
		// The failed member's pod is replaced twice (the broken image, then the test's
		// restart), so not expectClean's once per member.
		res.expectNoLoss()
		res.expectElections(1, "2.4.1")
		tc.expectAllOn(ctx, "2.4.1")
	}, SpecTimeout(10*time.Minute))
})
