package openbaocluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao/openbaofake"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// These specs drive the adminops reconciler pass by pass through a change of
// membership (spec.replicas, or voters left behind) and kill the operator after any
// pass, with the crash model of the rolling-upgrade restart specs: the pass took its
// action (set the StatefulSet's replicas, created an executor Job, deleted a volume
// claim) and died before its status write. The world (scalingWorld) checks its
// invariants at every step; after each run the cluster must be exactly
// spec.replicas voting members, and the disruptive actions those of the reference
// run, an action repeated only while its outcome was not yet visible.
//
// Like the restart specs, they use an API server of their own, with nothing running
// but the passes the test makes and the world it simulates in between, on a fake
// clock.
var _ = Describe("Scaling across operator restarts", Ordered, ContinueOnFailure, func() {
	var k client.WithWatch
	// The runs go at once; their reconcilers' logs would only interleave.
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())

	BeforeAll(func() { k = isolatedAPIServer() })

	DescribeTable("changes membership through Raft, one member at a time, whichever pass the operator dies after",
		func(run scalingRun, want scalingWant) {
			prefix := run.ns
			By("a reference run without a crash")
			run.ns, run.crashAt = prefix+"-ref", -1
			ref := runScaling(ctx, k, run)
			expectScaled(ctx, ref, run, want)
			passes := ref.loopPasses
			GinkgoWriter.Printf("%s: reference run: %d passes, actions %v%s\n", prefix, passes, ref.whats(), ref.history())

			By(fmt.Sprintf("a run with a crash after each of the %d passes that write status", passes))
			eachCrash(passes, ref.writes, scalingWorkers, func(crashAt int) {
				r := run
				r.ns, r.crashAt = fmt.Sprintf("%s-k%d", prefix, crashAt), crashAt
				w := runScaling(ctx, k, r)
				for i := range crashAt {
					Expect(w.writes[i]).To(Equal(ref.writes[i]), "%s: up to the crash, pass %d is the reference run's", r.ns, i)
				}
				GinkgoWriter.Printf("%s: crash after pass %2d (%s): %d passes, actions %v\n", prefix, crashAt, ref.describePass(crashAt), w.loopPasses, w.whats())
				expectScaled(ctx, w, r, want)
			})
		},
		Entry("3 → 5", scalingRun{ns: "scale3to5", from: 3, to: 5, leader: 0},
			scalingWant{actions: []string{"replicas 4", "promote bao-3", "replicas 5", "promote bao-4"},
				volumes: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4"}}),
		Entry("5 → 3, the leader on ordinal 0", scalingRun{ns: "scale5to3", from: 5, to: 3, leader: 0},
			scalingWant{actions: []string{"removepeer bao-4", "replicas 4", "removepeer bao-3", "replicas 3"},
				volumes: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4"}}),
		// The step-down hands leadership to the highest other voter, the worst successor:
		// bao-1, which leaves too, is demoted first, so that one election is all it takes.
		Entry("3 → 1, the leader on the highest ordinal: one step-down",
			scalingRun{ns: "scale3to1", from: 3, to: 1, leader: 2, highestSuccessor: true},
			scalingWant{actions: []string{"demote bao-1", "stepdown bao-2", "removepeer bao-2", "replicas 2", "removepeer bao-1", "replicas 1"},
				volumes: []string{"bao-0", "bao-1", "bao-2"}, leaderMoves: 1}),
		Entry("3 members and two dead voters bao-3, bao-4 left by a StatefulSet scaled down by hand",
			scalingRun{ns: "scaledead", from: 3, to: 3, leader: 0, dead: []string{"bao-3", "bao-4"}},
			scalingWant{actions: []string{"removepeer bao-3", "removepeer bao-4"},
				volumes: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4"}}),
		Entry("3 → 5 where bao-3's volume claim holds the data of a member removed from Raft",
			scalingRun{ns: "scalestale", from: 3, to: 5, leader: 1, staleVolumes: []string{"bao-3"}},
			scalingWant{actions: []string{"delete volume bao-3", "replicas 4", "promote bao-3", "replicas 5", "promote bao-4"},
				volumes: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4"}}),
		// Found by this spec: the promotion of bao-1 waited for the quorum budget forever
		// ("1 healthy of 2 voters"), since the voter being added was counted unhealthy
		// although it had just passed its gates. A 1-member cluster could not grow.
		// Issue 39: a member removed from Raft by hand while its pod kept serving. Its
		// data is stale and must never rejoin: the claim goes first, then the pod the
		// step began with; the member starts on a fresh volume, joins as a non-voter
		// and is promoted. A crash between the two deletions must not delete the new
		// pod (the step records the UID).
		Entry("3 members, bao-2 removed from Raft while its pod serves",
			scalingRun{ns: "rejoin", from: 3, to: 3, leader: 0, outOfRaft: []string{"bao-2"}},
			scalingWant{actions: []string{"delete volume bao-2", "delete pod bao-2", "promote bao-2"},
				volumes: []string{"bao-0", "bao-1", "bao-2"}}),
		Entry("3 members, bao-0 removed from Raft while bao-1 leads",
			scalingRun{ns: "rejoin0", from: 3, to: 3, leader: 1, outOfRaft: []string{"bao-0"}},
			scalingWant{actions: []string{"delete volume bao-0", "delete pod bao-0", "promote bao-0"},
				volumes: []string{"bao-0", "bao-1", "bao-2"}}),
		// Issue 39: two of three members' volumes lost at once, the leader survives;
		// break-glass MajorityLost, then the recovery a person asks for with its nonce:
		// peers.json on the survivor's node, the survivor restarted onto it, and the
		// lost members, re-created empty, promoted by scaling.
		Entry("3 members, bao-1 and bao-2 lost with their volumes, recovered from bao-0",
			scalingRun{ns: "recover", from: 3, to: 3, leader: 0, majorityLost: []string{"bao-1", "bao-2"}},
			scalingWant{actions: []string{"writepeers bao-0", "delete pod bao-0", "promote bao-1", "promote bao-2"},
				volumes: []string{"bao-0", "bao-1", "bao-2"}, leaderMoves: 1, recovered: true}),
		Entry("1 → 3", scalingRun{ns: "scale1to3", from: 1, to: 3, leader: 0},
			scalingWant{actions: []string{"replicas 2", "promote bao-1", "replicas 3", "promote bao-2"},
				volumes: []string{"bao-0", "bao-1", "bao-2"}}),
	)
})

// scalingWorkers is how many runs of a table entry go at once.
const scalingWorkers = 4

// scalingRun says how to run one membership change.
type scalingRun struct {
	// ns is the namespace of the run's cluster, created for it.
	ns string
	// from and to are spec.replicas before and after; leader is the ordinal of the
	// Raft leader.
	from, to, leader int32
	// dead are voters of the Raft configuration without a pod (their volume claims
	// are left).
	dead []string
	// staleVolumes are volume claims left by members removed from Raft earlier.
	staleVolumes []string
	// outOfRaft are members removed from the Raft configuration once the cluster
	// formed, while their pods keep serving (remove-peer by hand).
	outOfRaft []string
	// highestSuccessor makes step-downs hand leadership to the highest other voter.
	highestSuccessor bool
	// majorityLost are members whose volume claims and pods are deleted at once
	// before pass lossPass (the leader survives); a person then asks for the
	// recovery with the break-glass nonce, as kubectl bao recover-quorum does.
	majorityLost []string
	// crashAt is the pass whose status write fails; -1 for none.
	crashAt int
}

// scalingWant is what a run must end with.
type scalingWant struct {
	// actions are the disruptive actions of the reference run, in order.
	actions []string
	// volumes are the members whose volume claims exist at the end.
	volumes []string
	// leaderMoves is the number of elections.
	leaderMoves int
	// scalings is the number of scaling operations in history; 0 means 1.
	scalings int
	// recovered says a recovery from a lost majority must be in history, done.
	recovered bool
}

// lossPass is the pass before which a run's majority is lost: after the passes that
// recorded the voters with their claims (a crash may hide one of their writes).
const lossPass = 3

// scalingMaxPasses bounds a run.
const scalingMaxPasses = 150

// scalingAfterPasses are the passes run after the scaling completed, which must
// change nothing.
const scalingAfterPasses = 3

// runScaling creates, in a namespace of its own, a cluster of run.from Ready members
// (and the dead voters and left volume claims of the run), seeds its currentVersion
// with a first pass, sets spec.replicas to run.to and runs passes of a new adminops
// reconciler, each followed by a world step, until the scaling completed; then a few
// more.
func runScaling(ctx context.Context, k client.WithWatch, run scalingRun) *scalingWorld {
	GinkgoHelper()
	ns := run.ns
	c := createRestartCluster(ctx, k, ns, run.from)

	w := newScalingWorld(k, c, run.leader)
	w.highestSuccessor = run.highestSuccessor
	for i := range run.from {
		w.raft[w.member(i)] = true
	}
	for _, name := range run.dead {
		w.raft[name], w.lastIndex[name] = true, deadIndex
		w.addVolume(ctx, name)
	}
	for _, name := range run.staleVolumes {
		w.addVolume(ctx, name)
		w.removed[name] = true
	}
	// The cluster forms. The seed pass reads no autopilot state yet, so that it does
	// nothing but seed currentVersion (a cluster with dead voters would start scaling
	// in it).
	w.bao.SetError(openbaofake.MethodAutopilotState, errors.New("autopilot state is not ready"))
	formed := func() bool {
		for i := range run.from {
			if !w.ready(w.member(i)) {
				return false
			}
		}
		return true
	}
	for range 2*run.from + 1 {
		w.step(ctx)
	}
	Expect(formed()).To(BeTrue(), "%s: every member is Ready after the cluster formed", ns)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	_, err := w.reconciler(k).Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
	Expect(c.Status.CurrentVersion).To(Equal(restartFrom), "the first pass seeds currentVersion")
	Expect(c.Status.Scaling).To(BeNil(), "the first pass starts no scaling")
	w.bao.SetError(openbaofake.MethodAutopilotState, nil)
	for _, name := range run.outOfRaft {
		delete(w.raft, name)
		w.removed[name] = true
	}
	if len(run.outOfRaft) > 0 {
		w.publishScaling()
	}

	if run.to != run.from {
		c.Spec.Replicas = &run.to
		Expect(k.Update(ctx, c)).To(Succeed())
	}
	if len(run.majorityLost) > 0 {
		w.wantVoters = int(run.to)
	}
	asked := false
	w.crashAt = run.crashAt
	for w.pass = 0; !w.done; w.pass++ {
		if w.pass == scalingMaxPasses {
			Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
			var pods []string
			for name, p := range w.pods {
				pods = append(pods, fmt.Sprintf("%s ready=%t", name, podReady(p)))
			}
			slices.Sort(pods)
			w.incomplete = fmt.Sprintf("the scaling did not complete in %d passes; it waits for: %s; Raft %v, leader %q, pods %v, phase %s: %s",
				scalingMaxPasses, scalingWaitingFor(c), w.raftMembers(), w.leader, pods, c.Status.Phase, c.Status.Message)
			break
		}
		if len(w.violations) > 0 {
			w.incomplete = "stopped at the first broken invariant"
			break
		}
		if len(run.majorityLost) > 0 && w.pass == lossPass {
			w.loseMajority(ctx, run.majorityLost)
			w.publishScaling()
		}
		w.writes[w.pass] = nil
		_, err := w.reconciler(w.operatorClient(k)).Reconcile(ctx, req)
		if w.pass == w.crashAt {
			// The operator died: the pass's result and error went with it.
			Expect(err).To(MatchError(errOperatorCrashed), "%s: pass %d", ns, w.pass)
		} else {
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d", ns, w.pass)
		}
		if !asked && len(run.majorityLost) > 0 {
			asked = askRecovery(ctx, k, c)
		}
		w.step(ctx)
	}
	w.loopPasses = w.pass
	if w.incomplete == "" {
		for range scalingAfterPasses {
			w.writes[w.pass] = nil
			_, err := w.reconciler(w.operatorClient(k)).Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d, after the scaling completed", ns, w.pass)
			w.step(ctx)
			w.pass++
		}
	}
	return w
}

// askRecovery writes baokeeper.dev/recover-quorum with break-glass MajorityLost's
// survivor and nonce once break-glass says so, as kubectl bao recover-quorum does; it
// reports whether it wrote.
func askRecovery(ctx context.Context, k client.Client, c *baov1.OpenBaoCluster) bool {
	GinkgoHelper()
	Expect(k.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	bg := c.Status.BreakGlass
	if bg == nil || !bg.Active || bg.Reason != baov1.BreakGlassMajorityLost {
		return false
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[baov1.AnnotationRecoverQuorum] = bg.Survivor + ":" + bg.Nonce
	Expect(k.Update(ctx, c)).To(Succeed())
	return true
}

func scalingWaitingFor(c *baov1.OpenBaoCluster) string {
	s := c.Status.Scaling
	switch {
	case s == nil:
		return "no scaling in status"
	case s.Failure != nil:
		return fmt.Sprintf("failed: %s: %s", s.Failure.Reason, s.Failure.Message)
	default:
		return s.WaitingFor
	}
}

// expectScaled asserts what must hold after every run, crash or not: no invariant
// broke; the scaling completed and released the operation lock, and no other one
// started; the StatefulSet's replicas are spec.replicas; the Raft configuration is
// exactly bao-0..to-1, each a voter, each with a Ready pod; the volume claims of
// members that left are kept; the disruptive actions are the reference run's, an
// action repeated only while its outcome was not visible (the world checked that
// when it saw the repeat); leadership moved as often as planned.
func expectScaled(ctx context.Context, w *scalingWorld, run scalingRun, want scalingWant) {
	GinkgoHelper()
	name := run.ns + " (no crash)"
	if run.crashAt >= 0 {
		name = fmt.Sprintf("%s (crash after pass %d)", run.ns, run.crashAt)
	}
	Expect(w.violations).To(BeEmpty(), "%s: invariants broken; actions %v; passes:%s", name, w.whats(), w.history())
	Expect(w.incomplete).To(BeEmpty(), "%s: passes:%s", name, w.history())
	Expect(w.done).To(BeTrue(), "%s: a pass after the scaling completed started another one; passes:%s", name, w.history())
	for _, d := range w.disruptions {
		Expect(d.pass).To(BeNumerically("<", w.loopPasses), "%s: pass %d, after the scaling completed, did %s", name, d.pass, d.what)
	}

	c := &baov1.OpenBaoCluster{}
	Expect(w.k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	Expect(c.Status.Scaling).To(BeNil(), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the operation lock", name)
	sts := &appsv1.StatefulSet{}
	Expect(w.k.Get(ctx, w.stsKey(), sts)).To(Succeed())
	Expect(*sts.Spec.Replicas).To(Equal(run.to), "%s: StatefulSet replicas", name)

	var members, voters []string
	for i := range run.to {
		members = append(members, w.member(i))
		voters = append(voters, w.member(i)+" (voter)")
	}
	Expect(w.raftMembers()).To(Equal(voters), "%s: the Raft configuration", name)
	pods := &corev1.PodList{}
	Expect(w.k.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(workload.SelectorLabels(c)))).To(Succeed())
	var podNames []string
	for i := range pods.Items {
		podNames = append(podNames, pods.Items[i].Name)
		Expect(podReady(&pods.Items[i])).To(BeTrue(), "%s: pod %s is Ready", name, pods.Items[i].Name)
	}
	slices.Sort(podNames)
	Expect(podNames).To(Equal(members), "%s: pods", name)
	pvcs := &corev1.PersistentVolumeClaimList{}
	Expect(w.k.List(ctx, pvcs, client.InNamespace(c.Namespace))).To(Succeed())
	var volumes []string
	for _, pvc := range pvcs.Items {
		Expect(pvc.DeletionTimestamp).To(BeNil(), "%s: volume claim %s", name, pvc.Name)
		volumes = append(volumes, pvc.Name)
	}
	slices.Sort(volumes)
	var wantVolumes []string
	for _, m := range want.volumes {
		wantVolumes = append(wantVolumes, volumeOf(m))
	}
	Expect(volumes).To(Equal(wantVolumes), "%s: volume claims", name)

	if run.crashAt < 0 {
		Expect(w.whats()).To(Equal(want.actions), "%s: disruptive actions, in order", name)
	} else {
		Expect(withoutRepeats(w.whats())).To(Equal(want.actions), "%s: disruptive actions, in order, an action at most repeated; got %v", name, w.whats())
	}
	Expect(w.leaders).To(HaveLen(want.leaderMoves), "%s: elections", name)
	// One history entry for the scaling, written once whichever pass the operator
	// died after.
	var entries, recoveries []baov1.HistoryEntry
	for _, e := range c.Status.History {
		if e.Kind == baov1.HistoryScaling && e.FromReplicas == run.from && e.TargetReplicas == run.to {
			entries = append(entries, e)
		}
		if e.Kind == baov1.HistoryQuorumRecovery {
			recoveries = append(recoveries, e)
		}
	}
	Expect(entries).To(HaveLen(max(want.scalings, 1)), "%s: history entries of the scaling from %d to %d: %+v", name, run.from, run.to, c.Status.History)
	for _, e := range entries {
		Expect(e.Outcome).To(Equal(baov1.OutcomeSucceeded), name)
	}
	if want.recovered {
		Expect(recoveries).To(HaveLen(1), "%s: one recovery, whichever pass the operator died after: %+v", name, c.Status.History)
		Expect(recoveries[0].Outcome).To(Equal(baov1.OutcomeSucceeded), name)
		Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryDone), name)
		Expect(c.Status.BreakGlass.Active).To(BeFalse(), name)
	} else {
		Expect(recoveries).To(BeEmpty(), name)
	}
}
