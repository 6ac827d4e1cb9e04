//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// scaleTimeout bounds one scaling of the rig's clusters: each member added waits for
// its pod, its join as a non-voter and a promote Job; each removed one for a
// remove-peer Job (a demotion takes OpenBao about 10 s).
const scaleTimeout = 4 * time.Minute

// These specs share one cluster, in order: it grows and shrinks through Raft under a
// writer, loses its leader's ordinal, grows back onto the volumes of removed members,
// refuses a scale request during an upgrade, and then survives the leader's pod being
// deleted by hand in the middle of a second upgrade.
var _ = Describe("Scaling a cluster through Raft, and faults around upgrades", Ordered, SpecPriority(290), func() {
	const ns = "e2e-scale"
	var tc *testCluster
	ctx := context.Background()

	BeforeAll(func() {
		tc = newTestCluster(ctx, ns, 3)
		DeferCleanup(func() { deleteNamespace(context.Background(), ns) })
		// This Describe's upgrades hand leadership off with a step-down Job (the
		// other Describes use the default, Shutdown): the stale-Job spec below needs one.
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.LeaderHandoff = baov1.LeaderHandoffStepDown })
	})

	It("grows 3 → 5 under load: no lost write, no election, and the Raft configuration is exactly the 5 members, all voters", func() {
		leader := tc.settledLeader(ctx)
		res := tc.scaleUnderLoad(ctx, 5, memberNames(5), "scale 3 → 5", fmt.Sprintf("leader %s", leader))
		res.recordWindow(scenarioScaling, tc.ns)
		res.expectNoLoss()
		res.expectElections(0, "")
		tc.expectRaftMembers(ctx, memberNames(5))
		tc.expectJobsOf(ctx, executorjob.StepPromote, "bao-3", "bao-4")
	})

	It("shrinks 5 → 3 with the leader kept: no lost write, no election, the removed members' volumes kept", func() {
		leader := tc.settledLeader(ctx)
		Expect(memberNames(3)).To(ContainElement(leader), "the leader must stay for this spec; it is %s", leader)
		res := tc.scaleUnderLoad(ctx, 3, memberNames(3), "scale 5 → 3", fmt.Sprintf("leader %s", leader))
		res.expectNoLoss()
		res.expectElections(0, "")
		tc.expectRaftMembers(ctx, memberNames(3))
		tc.expectJobsOf(ctx, executorjob.StepRemovePeer, "bao-4", "bao-3")
		for _, m := range []string{"bao-3", "bao-4"} {
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "data-" + m}, &corev1.PersistentVolumeClaim{})).
				To(Succeed(), "the volume of %s is kept", m)
		}
	})

	It("removes the leader's ordinal with exactly one election (3 → 1), and says the truth about Raft all along", func() {
		kills := tc.placeLeaderLast(ctx)
		Expect(tc.settledLeader(ctx)).To(Equal("bao-2"))
		res := tc.scaleUnderLoad(ctx, 1, []string{"bao-0"}, "scale 3 → 1, leader on bao-2", fmt.Sprintf("leader placed after %d forced election(s)", kills))
		res.expectNoLoss()
		res.expectElections(1, "")
		tc.expectRaftMembers(ctx, []string{"bao-0"})
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(conditionString(c, baov1.ConditionAvailable)).To(HavePrefix("True/QuorumReady"))
			g.Expect(c.Status.Voters).To(Equal("1/1"))
			g.Expect(c.Status.Leader).To(Equal("bao-0"))
		}, time.Minute, pollEvery).Should(Succeed())
	})

	It("grows 1 → 3 onto the volumes of removed members: they join with fresh data, as non-voters first", func() {
		old := map[string]types.UID{}
		for _, m := range []string{"bao-1", "bao-2"} {
			pvc := &corev1.PersistentVolumeClaim{}
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "data-" + m}, pvc)).To(Succeed())
			old[m] = pvc.UID
		}
		res := tc.scaleUnderLoad(ctx, 3, memberNames(3), "scale 1 → 3")
		res.expectNoLoss()
		res.expectElections(0, "")
		tc.expectRaftMembers(ctx, memberNames(3))
		for m, uid := range old {
			pvc := &corev1.PersistentVolumeClaim{}
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "data-" + m}, pvc)).To(Succeed())
			Expect(pvc.UID).NotTo(Equal(uid), "%s got a fresh volume, not the data of the member removed from Raft", m)
		}
		// Events are sent after the status write lands, and asynchronously.
		Eventually(func() []string { return eventReasonsIn(ctx, ns) }, 30*time.Second, pollEvery).Should(ContainElement("VolumeDeleted"))
	})

	It("refuses a scale request during an upgrade with nothing changed, and upgrades with one election", func() {
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		Eventually(func(g Gomega) { g.Expect(tc.get(ctx, g).Status.Upgrade).NotTo(BeNil()) }, time.Minute, 200*time.Millisecond).Should(Succeed())
		five := int32(5)
		// A status write of the operator between the read and the update is a
		// Conflict, not the answer: read again until the API server judges the request.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c := tc.get(ctx, Default)
			c.Spec.Replicas = &five
			return k8s.Update(ctx, c)
		})
		Expect(err).To(HaveOccurred(), "a scale request during an upgrade must be refused")
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.replicas cannot change while an upgrade runs"))
		Expect(*tc.get(ctx, Default).Spec.Replicas).To(BeEquivalentTo(3), "nothing changed")
		tc.waitUpgraded(ctx, "2.4.1", 5*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("upgrade 2.4.0 → 2.4.1 after scaling")
		res.expectClean(tc, 1, "2.4.1")
		tc.expectRaftMembers(ctx, memberNames(3))
	})

	It("survives the leader's pod deleted by hand mid-upgrade: one planned election beyond the unplanned one, and no wait on the earlier upgrade's Job", func() {
		// The previous spec's upgrade left its step-down Job (succeeded, kept for its
		// TTL of 600 s): the bug took it for this upgrade's step-down and waited 9
		// minutes for the TTL.
		earlier := stepNames(tc.executorSteps(ctx, executorjob.StepStepDown))
		Expect(earlier).NotTo(BeEmpty(), "the earlier upgrade's step-down is still recorded")
		leader := tc.settledLeader(ctx)
		obs := tc.observe(ctx)
		start := time.Now()
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Version = "2.5.0"
			c.Spec.Upgrade.Rolling.SettleTime = baov1.DurationOf(10 * time.Second)
		})
		By("waiting until the first member passed its gates and settles")
		var first string
		Eventually(func(g Gomega) {
			up := tc.get(ctx, g).Status.Upgrade
			g.Expect(up).NotTo(BeNil())
			g.Expect(up.CurrentStep).NotTo(BeNil())
			g.Expect(up.CurrentStep.GatesPassedAt).NotTo(BeNil())
			first = up.CurrentStep.Pod
		}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
		Expect(first).NotTo(Equal(leader))
		By(fmt.Sprintf("deleting the leader's pod %s by hand while %s settles", leader, first))
		Expect(cs.CoreV1().Pods(ns).Delete(ctx, leader, metav1.DeleteOptions{})).To(Succeed())
		tc.waitUpgraded(ctx, "2.5.0", 5*time.Minute)
		obs.endWindow()
		took := time.Since(start)
		res := obs.finish(ctx)
		res.report("upgrade 2.4.1 → 2.5.0 with the leader's pod deleted by hand", fmt.Sprintf("took %s", took.Round(time.Second)))
		res.expectNoLoss()
		Expect(res.elections).To(BeNumerically("<=", 2), "the unplanned election and at most one planned one, terms: %s", res.termsString())
		Expect(took).To(BeNumerically("<", 4*time.Minute), "no wait on a stale Job")
		Expect(res.uids[leader]).To(HaveLen(2), "the old leader, re-created on the target by the StatefulSet, is not replaced again: %v", res.uids[leader])
		var fresh []executorStep
		for _, st := range tc.executorSteps(ctx, executorjob.StepStepDown) {
			if !slices.Contains(earlier, st.name) {
				fresh = append(fresh, st)
			}
		}
		Expect(len(fresh)).To(BeNumerically("<=", 1), "at most one step-down of this upgrade: %v", stepNames(fresh))
		for _, st := range fresh {
			Expect(st.operation).NotTo(BeEmpty())
			Expect(st.name).To(ContainSubstring(st.operation), "the step's name carries its upgrade")
		}
	})
})

// scaleUnderLoad sets spec.replicas to n under the shared observer, with members as
// the new set of members (written to and polled as soon as they have an address, or
// no longer once removed), waits until the scaling is over and reports what the
// observer saw.
func (tc *testCluster) scaleUnderLoad(ctx context.Context, n int32, members []string, title string, extra ...string) upgradeResult {
	GinkgoHelper()
	obs := tc.observe(ctx)
	tc.setMembers(members...)
	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Replicas = &n })
	tc.waitScaled(ctx, int(n))
	obs.endWindow()
	res := obs.finish(ctx)
	res.report(title, extra...)
	return res
}

// waitScaled waits until the scaling is over and the cluster is Running with n
// healthy voters.
func (tc *testCluster) waitScaled(ctx context.Context, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.Scaling).To(BeNil(), "%s", c.Status.Message)
		g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning), c.Status.Message)
		g.Expect(c.Status.Voters).To(Equal(fmt.Sprintf("%d/%d", n, n)), c.Status.Message)
		g.Expect(c.Status.ReadyMembers).To(BeEquivalentTo(n))
	}, scaleTimeout, pollEvery).Should(Succeed())
}

// expectRaftMembers reads sys/storage/raft/configuration and checks that it lists
// exactly the members, each a voter.
func (tc *testCluster) expectRaftMembers(ctx context.Context, members []string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		tok, err := tc.login(ctx, operatorToken(ctx, tc.ns), workload.ControllerRole)
		g.Expect(err).NotTo(HaveOccurred())
		s, err := tc.client(members[0], tok).Logical().ReadWithContext(ctx, "sys/storage/raft/configuration")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s).NotTo(BeNil())
		g.Expect(raftServers(s)).To(ConsistOf(members), "the Raft configuration is exactly the members, each a voter")
	}, time.Minute, pollEvery).Should(Succeed())
}

// expectJobsOf checks that executor steps of kind step (mailbox requests or Jobs)
// were asked for the members.
func (tc *testCluster) expectJobsOf(ctx context.Context, step string, members ...string) {
	GinkgoHelper()
	seen := map[string]bool{}
	for _, s := range tc.executorSteps(ctx, step) {
		seen[s.member] = true
	}
	for _, m := range members {
		Expect(seen).To(HaveKey(m), "a %s step for %s", step, m)
	}
}

// conditionString renders a condition as "Status/Reason: message" for assertions.
func conditionString(c *baov1.OpenBaoCluster, t baov1.ConditionType) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == string(t) {
			return fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message)
		}
	}
	return "missing"
}
