package scaling

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestDecide(t *testing.T) {
	started := metav1.NewTime(t0.Add(-time.Minute))
	base := func(n, target int32) Input {
		w := newWorld(n, 0)
		return Input{Scaling: Start("op", n, target, t0), Cluster: w.observe(target), Target: target, Replicas: n, ReplicasCurrent: true,
			MaxLag: 10, StepTimeout: 10 * time.Minute, Names: name}
	}
	withStep := func(in Input, action baov1.StepAction, pod string) Input {
		in.Scaling.CurrentStep = &baov1.UpgradeStep{Action: action, Pod: pod, StartedAt: &started}
		return in
	}
	cases := []struct {
		name, reason string
		in           func() Input
		want         Action
		wantPod      string
		wantText     string
	}{
		{name: "nothing to do", reason: "members match spec.replicas, every one a voter",
			in: func() Input { return base(3, 3) }, want: ActionComplete},
		{name: "scale down starts at the highest ordinal", reason: "the StatefulSet removes the highest ordinal, so it leaves Raft first",
			in: func() Input { return base(5, 3) }, want: ActionBeginStep, wantPod: "bao-4"},
		{name: "removal waits when another voter is down", reason: "invariant 1: removing a healthy voter of 3 with one down leaves 1 of 2",
			in: func() Input {
				in := withStep(base(3, 1), StepRemoveMember, "bao-2")
				in.Cluster.Members[1].Healthy = false
				return in
			}, want: ActionWait, wantText: "below a majority of 2"},
		{name: "a dead voter may go", reason: "removing an unhealthy voter raises the tolerance",
			in: func() Input {
				in := withStep(base(5, 3), StepRemoveMember, "bao-4")
				in.Cluster.Members[4].Healthy, in.Cluster.Members[4].PodReady = false, false
				return in
			}, want: ActionRemovePeer, wantPod: "bao-4"},
		{name: "a leader leaving steps down first", reason: "demoting or removing a leader is an uncontrolled election",
			in: func() Input {
				in := withStep(base(3, 1), StepRemoveMember, "bao-2")
				in.Cluster.Leader = "bao-2"
				return in
			}, want: ActionBeginStep, wantPod: "bao-2", wantText: "moving leadership off it"},
		{name: "the pod goes only after it left Raft", reason: "invariant 10: no voter leaves except through Raft",
			in: func() Input {
				in := withStep(base(5, 3), StepRemoveMember, "bao-4")
				in.Cluster.Members[4].InRaft, in.Cluster.Members[4].Voter = false, false
				return in
			}, want: ActionSetReplicas, wantPod: "bao-4", wantText: "its volume is kept"},
		{name: "promotion waits for catch-up", reason: "a new member votes only once caught up",
			in: func() Input {
				in := withStep(base(4, 5), StepAddMember, "bao-3")
				m := &in.Cluster.Members[3]
				m.Voter, m.LastIndex = false, 50
				in.Cluster.LeaderIndex = 100
				return in
			}, want: ActionWait, wantText: "index 50 behind, limit 10"},
		{name: "promotion waits while two voters are down", reason: "with two of three voters down, a fourth voter leaves 2 healthy of 4, below a majority of 3",
			in: func() Input {
				in := withStep(base(4, 5), StepAddMember, "bao-3")
				in.Cluster.Members[3].Voter = false
				in.Cluster.Members[1].Healthy = false
				in.Cluster.Members[2].Healthy = false
				return in
			}, want: ActionWait, wantText: "quorum budget"},
		{name: "promotion goes on with one voter down", reason: "the new member passed its gates: 3 healthy of 4 keeps the majority the cluster had",
			in: func() Input {
				in := withStep(base(4, 5), StepAddMember, "bao-3")
				in.Cluster.Members[3].Voter = false
				in.Cluster.Members[1].Healthy = false
				return in
			}, want: ActionPromote, wantPod: "bao-3"},
		{name: "a failed Job is retried after the cooldown", reason: "executor failures are retried, bounded",
			in: func() Input {
				in := withStep(base(4, 5), StepAddMember, "bao-3")
				in.Cluster.Members[3].Voter = false
				in.Scaling.CurrentStep.Attempts = 1
				in.Job = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-3 * time.Second), Message: "connection refused"}
				return in
			}, want: ActionWait, wantText: "retrying after 10 s"},
		{name: "attempts exhausted", reason: "a Job that keeps failing fails the step, naming it",
			in: func() Input {
				in := withStep(base(4, 5), StepAddMember, "bao-3")
				in.Cluster.Members[3].Voter = false
				in.Scaling.CurrentStep.Attempts = 3
				in.Job = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-time.Minute), Message: "403 permission denied"}
				return in
			}, want: ActionFail, wantText: "403 permission denied"},
		{name: "step timeout", reason: "a member that never joins fails the step",
			in: func() Input {
				in := withStep(base(4, 5), StepAddMember, "bao-3")
				long := metav1.NewTime(t0.Add(-11 * time.Minute))
				in.Scaling.CurrentStep.StartedAt = &long
				in.Cluster.Members[3].InRaft = false
				return in
			}, want: ActionFail, wantText: "did not finish AddMember within 10m0s"},
		{name: "a member out of Raft is brought back", reason: "issue 39: a member removed by hand while its pod serves stays out for ever otherwise",
			in: func() Input {
				in := base(3, 3)
				in.Scaling.CurrentStep = nil
				in.Cluster.Members[2].InRaft, in.Cluster.Members[2].Voter = false, false
				return in
			}, want: ActionBeginStep, wantPod: "bao-2", wantText: "not in the Raft configuration"},
		{name: "a member that lost its volume is left to join by itself", reason: "it starts uninitialized and not Ready, and joins as a non-voter on its own",
			in: func() Input {
				in := base(3, 3)
				m := &in.Cluster.Members[2]
				m.InRaft, m.Voter, m.PodReady, m.Initialized = false, false, false, false
				return in
			}, want: ActionComplete},
		{name: "no member out of Raft while no other member leads", reason: "a configuration that is not the cluster's own (another cluster's snapshot just restored) must not cost the only copy",
			in: func() Input {
				in := base(3, 3)
				in.Scaling.CurrentStep = nil
				in.Cluster.Leader = "bao-9"
				in.Cluster.Members[2].InRaft, in.Cluster.Members[2].Voter = false, false
				return in
			}, want: ActionComplete},
		{name: "nothing is deleted without a healthy majority elsewhere", reason: "checked again on the observation that would delete",
			in: func() Input {
				in := rejoining(base(3, 3), t0.Add(-time.Minute))
				in.VolumeExists = true
				in.Cluster.Members[1].Healthy = false
				return in
			}, want: ActionWait, wantText: "its data is kept"},
		{name: "rejoin waits for the member to stay out", reason: "an autopilot read that missed a member must not cost its data",
			in: func() Input {
				in := rejoining(base(3, 3), t0.Add(-10*time.Second))
				return in
			}, want: ActionWait, wantText: "if it is still out at 2026-12-01T12:00:20Z"},
		{name: "rejoin deletes the volume first", reason: "the data of a member outside the configuration is stale and must not rejoin",
			in: func() Input {
				in := rejoining(base(3, 3), t0.Add(-time.Minute))
				in.VolumeExists = true
				return in
			}, want: ActionDeleteVolume, wantPod: "bao-2"},
		{name: "then the pod", reason: "the StatefulSet creates it again on a fresh volume",
			in: func() Input { return rejoining(base(3, 3), t0.Add(-time.Minute)) }, want: ActionDeletePod, wantPod: "bao-2"},
		{name: "the pod created after is never deleted", reason: "only the pod the step began with holds the stale data",
			in: func() Input {
				in := rejoining(base(3, 3), t0.Add(-time.Minute))
				in.Cluster.Members[2].UID = "uid-new"
				return in
			}, want: ActionWait, wantText: "to join Raft as a non-voter"},
		{name: "back in Raft meanwhile", reason: "a member that reappears as a healthy voter keeps its data",
			in: func() Input {
				in := rejoining(base(3, 3), t0.Add(-10*time.Second))
				in.Cluster.Members[2].InRaft, in.Cluster.Members[2].Voter = true, true
				return in
			}, want: ActionCompleteStep, wantPod: "bao-2"},
		{name: "a rejoined non-voter is promoted", reason: "the rest of a rejoin is an added member's way",
			in: func() Input {
				in := rejoining(base(3, 3), t0.Add(-time.Minute))
				m := &in.Cluster.Members[2]
				m.UID, m.InRaft, m.Voter = "uid-new", true, false
				return in
			}, want: ActionPromote, wantPod: "bao-2"},
		{name: "a failed operation waits for a retry", reason: "nothing moves after a failure",
			in: func() Input {
				in := base(4, 5)
				in.Scaling.Failure = &baov1.UpgradeFailure{Reason: ReasonJobFailed, Pod: "bao-3"}
				return in
			}, want: ActionWait, wantText: "baokeeper.dev/retry"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Decide(tc.in())
			g.Expect(d.Action).To(Equal(tc.want), "%s: %s", tc.reason, d.WaitingFor)
			if tc.wantPod != "" {
				g.Expect(d.Pod).To(Equal(tc.wantPod), tc.reason)
			}
			g.Expect(d.WaitingFor+d.Message).To(ContainSubstring(tc.wantText), tc.reason)
		})
	}
}

// rejoining is in with a RejoinMember step of bao-2 begun at started on the pod
// uid-old, bao-2 serving outside the Raft configuration.
func rejoining(in Input, started time.Time) Input {
	at := metav1.NewTime(started)
	in.Scaling.CurrentStep = &baov1.UpgradeStep{Action: StepRejoinMember, Pod: "bao-2", StartedAt: &at, PodUID: "uid-old"}
	m := &in.Cluster.Members[2]
	m.UID, m.InRaft, m.Voter = "uid-old", false, false
	return in
}

func TestNeeded(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(3, 0)
	g.Expect(Needed(Input{Cluster: w.observe(3), Target: 3, Replicas: 3, Names: name})).To(BeFalse(), "3 voters for 3 replicas")
	g.Expect(Needed(Input{Cluster: w.observe(5), Target: 5, Replicas: 3, Names: name})).To(BeTrue(), "spec.replicas raised")
	w.raft["bao-4"] = true
	g.Expect(Needed(Input{Cluster: w.observe(3), Target: 3, Replicas: 3, Names: name})).To(BeTrue(), "a voter left behind without a pod")
	c := w.observe(3)
	c.AutopilotKnown = false
	g.Expect(Needed(Input{Cluster: c, Target: 3, Replicas: 3, Names: name})).To(BeFalse(), "nothing is decided without a trustworthy Raft view")
}

func TestRequested(t *testing.T) {
	w := newWorld(3, 0)
	unknown := w.observe(1)
	unknown.AutopilotKnown = false
	for _, tc := range []struct {
		name, reason string
		in           Input
		want         bool
	}{
		{name: "the size it has", reason: "nothing to wait for: an idle cluster costs no poll",
			in: Input{Cluster: w.observe(3), Target: 3, Replicas: 3, ReplicasCurrent: true}},
		{name: "spec.replicas raised", reason: "the operation starts once Raft can be read",
			in: Input{Cluster: w.observe(3), Target: 5, Replicas: 3, ReplicasCurrent: true}, want: true},
		{name: "spec.replicas raised while autopilot cannot be read", reason: "the member just restarted (the restore runbook): poll until it answers, nothing else will wake the upgrade manager",
			in: Input{Cluster: unknown, Target: 3, Replicas: 1, ReplicasCurrent: true}, want: true},
		{name: "spec.replicas lowered", reason: "a scale-down is a request too",
			in: Input{Cluster: w.observe(3), Target: 1, Replicas: 3, ReplicasCurrent: true}, want: true},
		{name: "the StatefulSet controller has not seen the last change", reason: "its replicas are not what runs yet",
			in: Input{Cluster: w.observe(3), Target: 3, Replicas: 3}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Requested(tc.in)).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestNonVoterPromotionWaitsForAutopilot(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(3, 0)
	w.raft["bao-2"] = false
	c := w.observe(3)
	c.Members[2].StableSince = t0.Add(-5 * time.Second)
	in := Input{Cluster: c, Target: 3, Replicas: 3, Names: name}
	g.Expect(Needed(in)).To(BeFalse(), "a member that joined normally is promoted by autopilot within its stabilization time: no operation during a cluster's formation")
	c.Members[2].StableSince = t0.Add(-PromoteAfter)
	g.Expect(Needed(in)).To(BeTrue(), "a non-voter that stays one while healthy joined as a permanent non-voter: promote it")
}

// A cluster at rest has no event that wakes the upgrade manager when a non-voter
// becomes eligible for its promotion: NextPromotion is that timer.
func TestNextPromotion(t *testing.T) {
	cases := []struct {
		name, reason string
		mutate       func(c *operation.Cluster)
		want         time.Duration
	}{
		{name: "every member votes", reason: "nothing waits: no timer, an idle cluster costs nothing here",
			mutate: func(*operation.Cluster) {}, want: 0},
		{name: "a non-voter healthy for 5 s", reason: "it may be promoted 25 s from now",
			mutate: func(c *operation.Cluster) {
				c.Members[2].Voter, c.Members[2].StableSince = false, t0.Add(-5*time.Second)
			}, want: 25 * time.Second},
		{name: "a non-voter already eligible", reason: "a second from now at the soonest, so no tight loop",
			mutate: func(c *operation.Cluster) { c.Members[2].Voter, c.Members[2].StableSince = false, t0.Add(-time.Hour) }, want: time.Second},
		{name: "an unhealthy non-voter", reason: "looked at again soon, since its health has no watch",
			mutate: func(c *operation.Cluster) { c.Members[1].Voter, c.Members[1].Healthy = false, false }, want: NonVoterRecheck},
		{name: "the sooner of two", reason: "the next timer is the earliest",
			mutate: func(c *operation.Cluster) {
				c.Members[1].Voter, c.Members[1].StableSince = false, t0.Add(-20*time.Second)
				c.Members[2].Voter, c.Members[2].StableSince = false, t0.Add(-5*time.Second)
			}, want: 10 * time.Second},
		{name: "a member above spec.replicas", reason: "a member about to leave is not promoted",
			mutate: func(c *operation.Cluster) {
				c.Members = append(c.Members, operation.Member{Name: "bao-3", Ordinal: 3, PodExists: true, PodReady: true, InRaft: true, Healthy: true, StableSince: t0})
			}, want: 0},
		{name: "autopilot unknown", reason: "nothing is judged without a trustworthy Raft view; the workload loop's refresh wakes the manager",
			mutate: func(c *operation.Cluster) { c.Members[2].Voter, c.AutopilotKnown = false, false }, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newWorld(3, 0).observe(3)
			tc.mutate(c)
			NewWithT(t).Expect(NextPromotion(Input{Cluster: c, Target: 3, Replicas: 3, Names: name})).To(Equal(tc.want), tc.reason)
		})
	}
}
