//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

// faultyExecutorImage maps (test/rig/images.txt) to bin/baokeeper-faulty: the
// operator's own binary, except that the executor action named in the fault file
// (setExecutorFault) fails. The injection lives in the test and the rig's image map;
// the product knows nothing of it.
const faultyExecutorImage = "ghcr.io/baokeeper/baokeeper:faulty"

func faultFile() string { return filepath.Join(rigDir, "executor-fault") }

// killAfterFile lists executor actions (one per line) whose next run is killed
// (SIGKILL) right after the real action returned: the Raft change is made, the Job
// fails as if its pod had been killed before it could report. Each line is used once.
func killAfterFile() string { return filepath.Join(rigDir, "executor-kill-after") }

func writeFaultyExecutor() {
	GinkgoHelper()
	script := fmt.Sprintf(`#!/bin/bash
# Written by the e2e suite: baokeeper, with the executor action named in %[1]s failing
# ("<action>" for every member, "<action> <member>" for one), and the next run of each
# action listed in %[3]s killed right after it acted. baokeeper runs with this script
# as its argv[0], so that the actions a serving executor runs as processes of their
# own (executor serve) come through here too.
f=$(cat %[1]q 2>/dev/null)
if [ -n "$f" ] && [ "$1" = executor ]; then
  action=${f%%%% *}; member=${f#* }; [ "$member" = "$f" ] && member=""
  if [ "$2" = "$action" ] && { [ -z "$member" ] || [ "$4" = "$member" ]; }; then
    echo "injected fault (test/e2e): executor $action fails" >&2
    exit 1
  fi
fi
if [ "$1" = executor ] && [ -n "$2" ] && grep -qx -- "$2" %[3]q 2>/dev/null; then
  sed -i "/^$2\$/d" %[3]q
  %[2]q "$@"
  echo "injected fault (test/e2e): executor $2 killed (SIGKILL) right after it acted (exit $?)" >&2
  kill -9 $$
fi
exec -a "$0" %[2]q "$@"
`, faultFile(), filepath.Join(root, "bin", "baokeeper"), killAfterFile())
	Expect(os.WriteFile(filepath.Join(root, "bin", "baokeeper-faulty"), []byte(script), 0o755)).To(Succeed())
}

// setExecutorFault makes executor action (for member, or every member when empty)
// fail in Jobs that run faultyExecutorImage; "" clears it.
func setExecutorFault(action, member string) {
	GinkgoHelper()
	f := strings.TrimSpace(action + " " + member)
	Expect(os.WriteFile(faultFile(), []byte(f), 0o600)).To(Succeed())
}

// killExecutorAfter makes the next run of each action in Jobs that run
// faultyExecutorImage die right after it acted.
func killExecutorAfter(actions ...string) {
	GinkgoHelper()
	Expect(os.WriteFile(killAfterFile(), []byte(strings.Join(actions, "\n")+"\n"), 0o600)).To(Succeed())
}

// killsPending returns the actions of killExecutorAfter not run yet.
func killsPending() []string {
	GinkgoHelper()
	b, err := os.ReadFile(killAfterFile())
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(string(b))
}

// These specs share one 3-member cluster on 2.4.0 under BlueGreen (a rollback leaves
// the version alone, so every attempt goes to 2.4.1 again), in order: an automatic
// rollback on a failing validation hook; a manual rollback of an upgrade that failed
// after green was promoted and one blue follower demoted; a rollback from the hold
// whose green peer cannot be removed, which enters break-glass, refuses a wrong nonce
// and finishes on the right one; a rollback refused after the point of no return;
// and, under RollingUpdate, a loss of quorum that enters break-glass.
var _ = Describe("Rolling back blue-green upgrades, and break-glass", Ordered, SpecPriority(480), func() {
	const ns = "e2e-rollback"
	var tc *testCluster
	var blue []string
	ctx := context.Background()

	BeforeAll(func() {
		tc = newTestCluster(ctx, ns, 3)
		DeferCleanup(func() { deleteNamespace(context.Background(), ns) })
		blue = tc.memberList()
		setExecutorFault("", "")
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
			c.Spec.Upgrade.BlueGreen.MinSyncDuration = ptrTo(baov1.Duration("3s"))
		})
	})

	It("rolls back on its own when the validation hook fails: blue keeps leading, green is gone", func() {
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.BlueGreen.AutoRollback.OnValidationFailure = true
			c.Spec.Upgrade.BlueGreen.ValidationHook = &baov1.ValidationHookSpec{
				Image: "ghcr.io/openbao/openbao:2.4.1", Command: []string{"bao"}, Args: []string{"read", "sys/baokeeper-e2e-denied"},
				Timeout: ptrTo(baov1.Duration("1m"))}
		})
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		green := tc.waitGreenNamed(ctx, 3)
		tc.setMembers(append(blue, green...)...)
		c := tc.waitRolledBack(ctx, 1)
		Expect(c.Status.LastRollback.Reason).To(ContainSubstring("ValidationFailed"))
		Expect(c.Status.LastRollback.Reason).To(ContainSubstring("autoRollback"))
		tc.setMembers(blue...)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("automatic rollback on a failing validation hook", fmt.Sprintf("green %v", green))
		res.recordWindow(scenarioRollback, ns)
		tc.expectBlueRestored(ctx, res, blue, green)

		By("not starting the rolled-back upgrade again on its own")
		Consistently(func(g Gomega) { g.Expect(tc.get(ctx, g).Status.Upgrade).To(BeNil()) }, 5*time.Second, pollEvery).Should(Succeed())
		c = tc.get(ctx, Default)
		Expect(meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionRolledBack)).Message).To(ContainSubstring("baokeeper.dev/retry"))
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.BlueGreen.AutoRollback.OnValidationFailure = false
			c.Spec.Upgrade.BlueGreen.ValidationHook = nil
		})
	})

	It("rolls back an upgrade that failed after promotion: the demoted blue follower votes again, green is gone, no election", func() {
		leader := tc.settledLeader(ctx)
		// Followers are demoted in ordinal order: the second one fails, the first
		// is demoted already.
		var followers []string
		for _, m := range blue {
			if m != leader {
				followers = append(followers, m)
			}
		}
		setExecutorFault("demote", followers[1])
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Executor.Image = faultyExecutorImage
			c.Spec.Upgrade.BlueGreen.MaxJobFailures = ptrTo(int32(2))
		})
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRetry, "after-auto-rollback") })
		green := tc.waitGreenNamed(ctx, 3)
		tc.setMembers(append(blue, green...)...)
		tc.waitPromotionHold(ctx)
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationPromote, "promote-then-fail") })
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Failure).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.Upgrade.Failure.Reason).To(Equal(baov1.FailureDemoteFailed))
		}, blueGreenTimeout, pollEvery).Should(Succeed())
		st, err := tc.autopilot(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Voters).NotTo(ContainElement(followers[0]), "%s was demoted before the failure", followers[0])

		By("rolling back by hand with the executor fixed")
		setExecutorFault("", "")
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRollback, "after-demote-failed") })
		c := tc.waitRolledBack(ctx, 2)
		Expect(c.Status.LastRollback.Reason).To(ContainSubstring("rollback=after-demote-failed after DemoteFailed"))
		tc.setMembers(blue...)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("manual rollback after promotion, a blue follower demoted", fmt.Sprintf("green %v", green))
		tc.expectBlueRestored(ctx, res, blue, green)
		tc.expectJobsOf(ctx, "promote", followers[0]) // promoted back by an executor Job
	})

	It("enters break-glass when a green peer cannot be removed, refuses a wrong nonce, and finishes the rollback on the right one", func() {
		setExecutorFault("remove-peer", "")
		obs := tc.observe(ctx)
		from := time.Now()
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRetry, "after-manual-rollback") })
		green := tc.waitGreenNamed(ctx, 3)
		tc.setMembers(append(blue, green...)...)
		tc.waitPromotionHold(ctx)
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRollback, "from-the-hold") })

		var bg *baov1.BreakGlassStatus
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.BreakGlass).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.BreakGlass.Active).To(BeTrue(), c.Status.Message)
			g.Expect(c.Status.Phase).To(Equal(baov1.PhaseBreakGlass))
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(baov1.ConditionBreakGlass))).To(BeTrue())
			bg = c.Status.BreakGlass
		}, blueGreenTimeout, pollEvery).Should(Succeed())
		Expect(bg.Reason).To(Equal(baov1.BreakGlassRollbackFailed))
		Expect(bg.Message).To(ContainSubstring("from-the-hold"))
		Expect(bg.Nonce).To(HaveLen(32))
		Expect(bg.Members).To(HaveLen(6), "the Raft view holds blue and green")
		Expect(blue).To(ContainElement(bg.Leader), "blue leads")
		Expect(bg.RecoverySteps[len(bg.RecoverySteps)-1]).To(ContainSubstring("baokeeper.dev/break-glass-ack=" + bg.Nonce))
		Expect(strings.Join(bg.RecoverySteps, "\n")).To(ContainSubstring("kubectl logs -n " + ns + " job/"))
		// Events are sent after the status write lands, and asynchronously.
		Eventually(func() []string { return eventMessagesOf(ctx, ns, "BreakGlassEntered") }, 30*time.Second, pollEvery).NotTo(BeEmpty())

		By("changing nothing while break-glass is active")
		jobs := tc.allJobNames(ctx)
		Consistently(func(g Gomega) {
			g.Expect(tc.allJobNames(ctx)).To(Equal(jobs), "no executor Job")
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: strings.TrimSuffix(green[0], "-0")}, &appsv1.StatefulSet{})).To(Succeed(), "green stays")
		}, 8*time.Second, pollEvery).Should(Succeed())
		recordScenario(scenarioBreakGlass, ns, from, time.Now())

		By("refusing a wrong nonce")
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationBreakGlassAck, "not-the-nonce") })
		Eventually(func(g Gomega) {
			g.Expect(eventMessagesOf(ctx, ns, "BreakGlassAckRefused")).To(ContainElement(ContainSubstring("not-the-nonce")))
		}, time.Minute, pollEvery).Should(Succeed())
		Expect(tc.get(ctx, Default).Status.BreakGlass.Active).To(BeTrue())

		By("fixing the executor and acknowledging the current nonce")
		setExecutorFault("", "")
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationBreakGlassAck, bg.Nonce) })
		c := tc.waitRolledBack(ctx, 3)
		Expect(c.Status.BreakGlass.Active).To(BeFalse())
		Expect(c.Status.BreakGlass.AcknowledgedAt).NotTo(BeNil())
		Expect(c.Status.BreakGlass.AcknowledgedBy).NotTo(BeEmpty())
		tc.setMembers(blue...)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rollback from the hold through break-glass", fmt.Sprintf("green %v, acknowledged by %s", green, c.Status.BreakGlass.AcknowledgedBy))
		tc.expectBlueRestored(ctx, res, blue, green)
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Executor.Image = "" })
	})

	// The upgrade also runs through executor pods killed (SIGKILL) right after a
	// green member's promotion, the blue leader's step-down and a blue peer's
	// removal acted, before their Jobs could report: each Raft change is made and its
	// Job fails. Expected: the operator goes on from the Raft configuration it
	// observes (a retried promotion or removal finds it done, a step-down is not
	// retried once green leads), with one election and no write lost.
	It("refuses a rollback once green has led, and completes the upgrade through executor pods killed right after a promotion, the step-down and a peer removal: one election", func() {
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.BlueGreen.AutoPromote = true
			c.Spec.Upgrade.Executor.Image = faultyExecutorImage
		})
		setExecutorFault("", "")
		killExecutorAfter("promote", "step-down", "remove-peer")
		jobsBefore := tc.allJobNames(ctx)
		DeferCleanup(func() {
			killExecutorAfter()
			tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Executor.Image = "" })
		})
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRetry, "after-break-glass") })
		green := tc.waitGreenNamed(ctx, 3)
		tc.setMembers(append(blue, green...)...)
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.BlueGreen).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.BlueGreen.LeaderMovedAt).NotTo(BeNil(), c.Status.Message)
		}, blueGreenTimeout, 200*time.Millisecond).Should(Succeed())
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationRollback, "too-late") })
		Eventually(func(g Gomega) {
			g.Expect(eventMessagesOf(ctx, ns, "RollbackRefused")).To(ContainElement(And(ContainSubstring("too-late"), ContainSubstring("kubectl bao restore"))))
		}, time.Minute, pollEvery).Should(Succeed())
		tc.waitUpgraded(ctx, "2.4.1", blueGreenTimeout)
		tc.setMembers(green...)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rollback refused after the point of no return", fmt.Sprintf("green %v", green))
		tc.expectBlueGreenDone(ctx, res, "bao", green, "2.4.1")
		Expect(tc.get(ctx, Default).Status.LastRollback).To(BeNil(), "a new upgrade cleared the last rollback")

		By("each kill cost its step one failed attempt, and nothing more")
		Expect(killsPending()).To(BeEmpty(), "every injected kill happened")
		for _, step := range []string{executorjob.StepPromote, executorjob.StepStepDown, executorjob.StepRemovePeer} {
			failed := 0
			for _, s := range tc.executorSteps(ctx, step) {
				if !slices.Contains(jobsBefore, s.name) && s.failed {
					failed++
				}
			}
			Expect(failed).To(Equal(1), "one %s attempt of this upgrade was killed", step)
		}
	})

	It("enters break-glass when a rolling upgrade loses a majority of voters, and deletes no further pod", func() {
		members := tc.memberList()
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Strategy = baov1.RollingUpdateStrategy })
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.5.0" })
		// Once the first member's step is recorded, the upgrade has started: the two
		// other members are frozen, which no step plans.
		var stepPod string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.Upgrade.CurrentStep).NotTo(BeNil(), c.Status.Message)
			stepPod = c.Status.Upgrade.CurrentStep.Pod
		}, time.Minute, 50*time.Millisecond).Should(Succeed())
		var frozen []string
		for _, m := range members {
			if m != stepPod {
				frozen = append(frozen, m)
			}
		}
		By(fmt.Sprintf("freezing %v: a majority of voters stops answering", frozen))
		var pids []int
		for _, m := range frozen {
			p := podPIDs(ns, m, "/bin/bao-")
			Expect(p).NotTo(BeEmpty(), "no OpenBao process of %s", m)
			pids = append(pids, p...)
		}
		thaw := freezePIDs(pids)
		var bg *baov1.BreakGlassStatus
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.BreakGlass).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.BreakGlass.Active).To(BeTrue(), c.Status.Message)
			bg = c.Status.BreakGlass
		}, 2*time.Minute, pollEvery).Should(Succeed())
		Expect(bg.Reason).To(Equal(baov1.BreakGlassQuorumLost))
		for _, m := range frozen {
			Expect(bg.Message).To(ContainSubstring(m))
		}

		// The step's member may have been replaced before; from now on no pod goes.
		uids := map[string]types.UID{}
		for _, m := range members {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue // the step's member, being re-created by its StatefulSet
			}
			Expect(err).NotTo(HaveOccurred())
			if p.DeletionTimestamp == nil {
				uids[m] = p.UID
			}
		}
		By("thawing them: break-glass stays, and no pod is deleted")
		thaw()
		Consistently(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.BreakGlass.Active).To(BeTrue())
			for m, uid := range uids {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.UID).To(Equal(uid), "%s was not replaced", m)
				g.Expect(p.DeletionTimestamp).To(BeNil(), "%s is not being deleted", m)
			}
		}, 15*time.Second, pollEvery).Should(Succeed())

		By("acknowledging: the upgrade goes on from what it observes and completes")
		Eventually(func(g Gomega) {
			st, err := tc.autopilot(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Healthy).To(BeTrue())
		}, 2*time.Minute, pollEvery).Should(Succeed())
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { setAnnotation(c, baov1.AnnotationBreakGlassAck, bg.Nonce) })
		tc.waitUpgraded(ctx, "2.5.0", 5*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rolling upgrade through a loss of quorum and break-glass", fmt.Sprintf("frozen %v", frozen))
		// The freeze starves the writer on purpose, so only the promise that matters
		// here: no acknowledged write is lost.
		Expect(res.watchErr).NotTo(HaveOccurred())
		Expect(res.lost).To(BeZero(), "no acknowledged write may be lost: %v", res.problems)
		Expect(res.unreadable).To(BeZero(), "every acknowledged write must be read back: %v", res.problems)
		tc.expectAllOn(ctx, "2.5.0")
	})
})

// waitPromotionHold waits until the blue-green upgrade holds for promotion: a
// promote value set before (phase AwaitPromotion entered, hold not yet recorded)
// would be refused as early.
func (tc *testCluster) waitPromotionHold(ctx context.Context) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.BlueGreen).NotTo(BeNil(), c.Status.Message)
		g.Expect(c.Status.BlueGreen.Phase).To(Equal(baov1.BlueGreenAwaitPromotion), c.Status.Message)
		g.Expect(c.Status.BlueGreen.Promotion).To(Equal(baov1.PromotionWaiting), c.Status.Message)
	}, blueGreenTimeout, 200*time.Millisecond).Should(Succeed())
}

// waitRolledBack waits until the n-th rollback of this cluster finished.
func (tc *testCluster) waitRolledBack(ctx context.Context, n int) *baov1.OpenBaoCluster {
	GinkgoHelper()
	var c *baov1.OpenBaoCluster
	Eventually(func(g Gomega) {
		c = tc.get(ctx, g)
		g.Expect(c.Status.Upgrade).To(BeNil(), c.Status.Message)
		g.Expect(c.Status.LastRollback).NotTo(BeNil(), c.Status.Message)
		g.Expect(len(eventMessagesOf(ctx, tc.ns, "RolledBack"))).To(BeNumerically(">=", n))
	}, blueGreenTimeout, pollEvery).Should(Succeed())
	return c
}

// expectBlueRestored checks the promises of a rollback: no acknowledged write lost,
// no election (blue's leader led all along), the Raft configuration holding exactly
// blue's members, every one a voter, green's StatefulSet and volumes gone, the client
// Service still on blue, currentVersion unchanged and the RolledBack condition set.
func (tc *testCluster) expectBlueRestored(ctx context.Context, res upgradeResult, blue, green []string) {
	GinkgoHelper()
	res.expectNoLoss()
	res.expectElections(0, "")
	Expect(blue).To(ContainElement(res.leaders[0]), "blue leads")
	tc.expectRaftMembers(ctx, blue)
	tc.expectVoters(ctx, blue...)
	c := tc.get(ctx, Default)
	Expect(c.Status.CurrentVersion).To(Equal("2.4.0"))
	Expect(c.Status.BlueGreen).To(BeNil())
	Expect(c.Status.StatefulSet).To(BeElementOf("", "bao"))
	Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(baov1.ConditionRolledBack))).To(BeTrue())
	sts := strings.TrimSuffix(green[0], "-0")
	err := k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: sts}, &appsv1.StatefulSet{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "green's StatefulSet %s is deleted: %v", sts, err)
	Eventually(func(g Gomega) {
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(k8s.List(ctx, pvcs, client.InNamespace(tc.ns))).To(Succeed())
		for _, p := range pvcs.Items {
			g.Expect(p.Name).NotTo(HavePrefix("data-"+sts+"-"), "green's volumes go once its pods have terminated")
		}
	}, time.Minute, pollEvery).Should(Succeed())
	svc := &corev1.Service{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: name}, svc)).To(Succeed())
	Expect(svc.Spec.Selector).NotTo(HaveKeyWithValue("app.kubernetes.io/instance", sts), "the client Service never left blue")
	tc.expectAllOn(ctx, "2.4.0")
}

// allJobNames lists every Job in the cluster's namespace and every step asked of
// an executor through the mailbox.
func (tc *testCluster) allJobNames(ctx context.Context) []string {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(k8s.List(ctx, jobs, client.InNamespace(tc.ns))).To(Succeed())
	var out []string
	for _, j := range jobs.Items {
		out = append(out, j.Name)
	}
	for _, step := range []string{executorjob.StepStepDown, executorjob.StepPromote, executorjob.StepDemote, executorjob.StepRemovePeer} {
		for _, s := range tc.executorSteps(ctx, step) {
			if !slices.Contains(out, s.name) {
				out = append(out, s.name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// podPIDs finds the processes of a pod's container whose binary path contains exe:
// the rig runs containers as host processes, with the pod's name as HOSTNAME.
func podPIDs(ns, pod, exe string) []int {
	GinkgoHelper()
	var out []int
	for _, pid := range processesOf(ns, pod) {
		path, err := os.Readlink(filepath.Join("/proc", fmt.Sprint(pid), "exe"))
		if err == nil && strings.Contains(path, exe) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

func setAnnotation(c *baov1.OpenBaoCluster, key, value string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = value
}
