//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
)

const clockNS = "e2e-clock"

// Clock skew: the members run with the rig's adjustable clock
// (test/rig/nodeagent/clock.go), so that a member's wall clock can be set minutes off,
// as on a node whose time sync failed, while its monotonic clock (Raft's timers) runs
// on. They have a cluster of their own: the adjustable clock makes every clock read a
// system call, which slows the members, and the partition specs' election counts
// are for members at full speed.
var _ = Describe("Clock skew on members", Ordered, SpecPriority(240), func() {
	var tc *testCluster

	BeforeAll(func(ctx SpecContext) {
		tc = newTestClusterWith(ctx, clockNS, 3, func(c *baov1.OpenBaoCluster) {
			c.Spec.PodAnnotations = map[string]string{nodeagent.PodClockAnnotation: nodeagent.PodClockAdjustable}
		})
	}, NodeTimeout(bringUp+time.Minute))
	AfterAll(func(ctx SpecContext) { deleteNamespace(ctx, clockNS) }, NodeTimeout(3*time.Minute))

	// A member's clock set minutes off, as on a node whose time sync failed. OpenBao's
	// Raft timers run on the monotonic clock and do not notice; but autopilot stamps
	// stable_since with the leader's wall clock, and baokeeper compares it with its own
	// before it promotes a member that rejoined. Expected: a follower that lost its
	// volume while the leader's clock runs 10 minutes ahead is a voter again within
	// the bound that holds when the clocks agree (the Rollouts spec), no election, no
	// write lost.
	It("promotes a follower that lost its volume at rest while the leader's clock runs 10 minutes ahead, as when clocks agree: no election", func(ctx SpecContext) {
		leader := tc.settledLeader(ctx)
		victim := tc.follower(ctx)
		version := tc.get(ctx, Default).Status.CurrentVersion
		skewClock(ctx, tc, leader, memberClockSkew)
		obs := tc.observe(ctx)
		obs.beginWindow()
		lost := tc.loseVolume(ctx, victim)
		voterSince := tc.waitVoterAgain(ctx, victim, 3*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("a follower lost its volume at rest, the leader's clock 10 minutes ahead, 3 members",
			fmt.Sprintf("%s (leader %s %s ahead) a voter again %s after its volume was deleted", victim, leader, memberClockSkew, voterSince.Sub(lost).Round(time.Second)))
		res.expectNoLoss()
		res.expectElections(0, version)
	}, SpecTimeout(6*time.Minute))

	// Both followers' clocks set 10 minutes ahead, before a rollout. Found on the rig
	// before the MemberClocks precheck existed: the leader handed off to one of them,
	// whose new certificates the restarted old leader took as not valid yet, and a
	// second election undid the hand-off (12 s without writes). Expected: the rollout
	// holds at its prechecks naming both clocks, takes nothing down, and completes
	// once they are set right: one election, no write lost.
	It("holds a rollout at its prechecks while the followers' clocks run 10 minutes ahead, names them, and completes once they are set right: one election", func(ctx SpecContext) {
		leader := tc.settledLeader(ctx)
		version := tc.get(ctx, Default).Status.CurrentVersion
		var skewed []string
		for _, m := range tc.memberList() {
			if m != leader {
				skewClock(ctx, tc, m, memberClockSkew)
				skewed = append(skewed, m)
			}
		}
		before := tc.templateRevision(ctx)
		uids := tc.podUIDs(ctx)
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRestart, "clock-ahead-"+randomHex(3)) })
		var held string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.Upgrade.Plan).NotTo(BeNil())
			pc := upgrade.FirstUnpassedPrecheck(c.Status.Upgrade.Plan.Prechecks)
			g.Expect(pc).NotTo(BeNil(), "every precheck passed with clocks off")
			g.Expect(pc.Name).To(Equal(upgrade.PrecheckMemberClocks), c.Status.Message)
			for _, m := range skewed {
				g.Expect(pc.Message).To(ContainSubstring(m+" (its clock is 10m0s ahead of baokeeper's"), c.Status.Message)
			}
			held = pc.Message
		}, 2*time.Minute, pollEvery).Should(Succeed())
		tc.holdsWithoutTakingDown(ctx, uids, 15*time.Second, "while the followers' clocks are ahead")
		for _, m := range skewed {
			Expect(nodeagent.SkewClock(tc.ns, m, 0)).To(Succeed())
		}
		fixedAt := time.Now()
		tc.waitRolledOut(ctx, before, 5*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx).allowGap(5*time.Second, clockGapWhy)
		res.report("restart asked with both followers' clocks 10 minutes ahead, 3 members",
			fmt.Sprintf("held at the prechecks until the clocks were set right at %s, with: %s", fixedAt.Format(clock), held))
		res.expectClean(tc, 1, version)
	}, SpecTimeout(7*time.Minute))

	// A follower's clock set 10 minutes behind once the rollout has replaced its
	// first member. Found on the rig before the gates checked clocks: once restarted
	// it never rejoined, refusing the cluster's Raft certificates (younger than 10
	// minutes) as not valid yet. Expected: the rollout holds, whether before it takes
	// the member down or as it fails to rejoin, with a message that names the member
	// and its clock; takes no other member down; and completes once the clock is set
	// right: one election, no write lost.
	It("holds a rollout mid-way while a follower's clock runs 10 minutes behind, names its clock, and completes once it is set right: one election", func(ctx SpecContext) {
		version := tc.get(ctx, Default).Status.CurrentVersion
		before := tc.templateRevision(ctx)
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRestart, "clock-behind-"+randomHex(3)) })
		first, victim := tc.followerNotReplacedYet(ctx)
		skewedAt := time.Now()
		skewClock(ctx, tc, victim, -memberClockSkew)
		By("waiting for the rollout to hold with a message that names " + victim + "'s clock")
		var held string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Message).To(ContainSubstring(victim+" (its clock is 10m0s behind baokeeper's"), "status: %s", c.Status.Message)
			held = c.Status.Message
		}, 2*time.Minute, pollEvery).Should(Succeed())
		tc.holdsWithoutTakingDown(ctx, tc.podUIDs(ctx), 15*time.Second, "while "+victim+"'s clock is behind")
		Expect(nodeagent.SkewClock(tc.ns, victim, 0)).To(Succeed())
		fixedAt := time.Now()
		tc.waitRolledOut(ctx, before, 5*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx).allowDown(victim, skewedAt, fixedAt.Add(30*time.Second), "its clock is behind the cluster's certificates until the spec sets it right").
			allowGap(5*time.Second, clockGapWhy)
		res.report("restart with a follower's clock set 10 minutes behind mid-way, 3 members",
			fmt.Sprintf("%s replaced first; %s's clock behind from %s to %s; held with: %s", first, victim, skewedAt.Format(clock), fixedAt.Format(clock), held))
		res.expectClean(tc, 1, version)
	}, SpecTimeout(10*time.Minute))
})

// memberClockSkew is how far a spec sets a member's clock off: minutes, far beyond
// the fraction of a second time sync keeps a node within, and beyond the 5 minutes
// by which baokeeper backdates the certificates it issues.
const memberClockSkew = 10 * time.Minute

// clockGapWhy is why a clock spec's hand-off may leave writes waiting up to 5 s, not
// 3: every wall-clock read of a clock-adjustable member is a system call answered by
// the rig's supervisor, and without the vDSO its monotonic reads are system calls too,
// which halves the rate at which such a cluster writes (17-21 acknowledged writes a
// second against 37); the first run's hand-off onto a just-restarted member took
// 3.4 s.
const clockGapWhy = "the adjustable clock makes every OpenBao clock read a system call, which halves the write rate; a hand-off onto a just-restarted member took 3.4 s"

// skewClock sets member's wall clock off by d (nodeagent.SkewClock: its pod, and the
// pods that replace it, read the time d ahead), checks that OpenBao itself reads it
// (sys/health's server_time_utc), and sets it right again when the spec ends.
func skewClock(ctx context.Context, tc *testCluster, member string, d time.Duration) {
	GinkgoHelper()
	By(fmt.Sprintf("setting %s's clock %s off", member, d))
	Expect(nodeagent.SkewClock(tc.ns, member, d)).To(Succeed())
	DeferCleanup(func() {
		Expect(nodeagent.SkewClock(tc.ns, member, 0)).To(Succeed())
	})
	Eventually(func(g Gomega) {
		h, err := tc.client(member, "").Sys().HealthWithContext(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		off := time.Unix(h.ServerTimeUTC, 0).Sub(time.Now())
		g.Expect(off).To(BeNumerically("~", d, 3*time.Second), "%s's server_time_utc is %s off", member, off)
	}, 30*time.Second, pollEvery).Should(Succeed(), "OpenBao on %s reads the skewed clock", member)
}
