//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/cli/kubectlbao"
)

const upNS = "e2e-upgrade"

// This Describe runs under the operator installed with the Helm chart, in namespace
// mode (operators_test.go), and drives its last upgrade through kubectl bao.
var _ = Describe("A rolling upgrade of a 3-member cluster from 2.4.0 to 2.4.1, by the operator installed with the Helm chart", Ordered, SpecPriority(130), func() {
	var tc *testCluster

	BeforeAll(func(ctx SpecContext) {
		installChartOperator(ctx)
		tc = newTestCluster(ctx, upNS, 3)
		expectChartOperatorManages(upNS)
	}, NodeTimeout(bringUp+3*time.Minute))

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

	It("holds a paused upgrade before the first member and finishes it when resumed, driven through kubectl bao", func(ctx SpecContext) {
		before := podUIDs(ctx)
		By("kubectl bao pause")
		var res kubectlbao.RequestResult
		Expect(json.Unmarshal([]byte(kubectlBao(ctx, "-n", upNS, "pause", name, "-o", "json")), &res)).To(Succeed())
		Expect(res.Written).To(BeTrue(), res.Next)
		Expect(res.Value).To(Equal("true"))
		Expect(getUp(ctx, Default).Spec.Upgrade.Paused).To(BeTrue())

		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.5.0" })
		Eventually(func(g Gomega) {
			c := getUp(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Message).To(ContainSubstring("paused by spec.upgrade.paused before bao-"))
			cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionUpgradePaused))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		}, 2*time.Minute, pollEvery).Should(Succeed())
		status := kubectlBao(ctx, "-n", upNS, "status", name)
		Expect(status).To(MatchRegexp(`Paused:\s+yes \(spec.upgrade.paused\)`), status)
		Expect(status).To(ContainSubstring("kubectl bao resume "+name+" -n "+upNS), status)
		Consistently(func() map[string]types.UID { return podUIDs(ctx) }, 5*time.Second, pollEvery).Should(Equal(before), "no member replaced while paused")

		By("kubectl bao pause again: nothing to write")
		Expect(json.Unmarshal([]byte(kubectlBao(ctx, "-n", upNS, "pause", name, "-o", "json")), &res)).To(Succeed())
		Expect(res.Written).To(BeFalse())

		By("kubectl bao resume")
		Expect(json.Unmarshal([]byte(kubectlBao(ctx, "-n", upNS, "resume", name, "-o", "json")), &res)).To(Succeed())
		Expect(res.Written).To(BeTrue(), res.Next)
		Expect(res.Value).To(Equal("false"))
		tc.waitUpgraded(ctx, "2.5.0", 5*time.Minute)
		obs.endWindow()
		upgraded := obs.finish(ctx)
		upgraded.report("paused, then resumed upgrade 3 members, 2.4.1 to 2.5.0, through kubectl bao")
		upgraded.expectClean(tc, 1, "2.5.0")
		tc.expectAllOn(ctx, "2.5.0")

		By("kubectl bao timeline: the upgrade's events in time order")
		var tl kubectlbao.TimelineOutput
		Expect(json.Unmarshal([]byte(kubectlBao(ctx, "-n", upNS, "timeline", name, "-o", "json")), &tl)).To(Succeed())
		var reasons []string
		for i, e := range tl.Events {
			if i > 0 {
				Expect(e.Time.Before(&tl.Events[i-1].Time)).To(BeFalse(), "event %d (%s) is older than the one before", i, e.Reason)
			}
			reasons = append(reasons, e.Reason)
		}
		Expect(reasons).To(ContainElements("UpgradePlanned", "UpgradeStep", "UpgradeCompleted"))
		Expect(lastIndex(reasons, "UpgradePlanned")).To(BeNumerically("<", lastIndex(reasons, "UpgradeCompleted")), "%v", reasons)
	}, SpecTimeout(8*time.Minute))
})

// lastIndex is the index of the last s in list, or -1.
func lastIndex(list []string, s string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == s {
			return i
		}
	}
	return -1
}

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
