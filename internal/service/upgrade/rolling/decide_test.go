package rolling

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// healthyCluster returns n healthy voters on the old image, with the given leader.
func healthyCluster(n, leader int) *operation.Cluster {
	c := &operation.Cluster{Now: t0, Leader: fmt.Sprintf("bao-%d", leader), AutopilotKnown: true, AutopilotHealthy: true, LeaderIndex: 500}
	for i := range n {
		c.Members = append(c.Members, operation.Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, PodExists: true, PodReady: true,
			Image: oldImage, Initialized: true, Version: "2.4.0", InRaft: true, Voter: true, Healthy: true, LastIndex: 500})
	}
	return c
}

func TestQuorumBudget(t *testing.T) {
	cases := []struct {
		name      string
		reason    string
		peers     int
		unhealthy []int
		nonVoters []int
		known     bool
		target    int
		want      bool
		wantWhy   string
		// apUnhealthy is autopilot's cluster verdict false; skews are members' clock offsets.
		apUnhealthy bool
		skews       map[int]time.Duration
		// notReady and silent are members whose pod is not Ready, or that did not
		// answer sys/health in this pass, while autopilot still calls them healthy.
		notReady, silent []int
		// unheard are members that turned Ready a second ago and that the leader last
		// heard from 4 s ago: its old instance.
		unheard []int
		// replication is what members' own metrics said of the replication they
		// received (their replication read, having turned Ready a second ago).
		replication map[int]operation.Replication
	}{
		{name: "3 healthy", reason: "3 voters tolerate one down", peers: 3, known: true, target: 1, want: true},
		{name: "3 with one unhealthy", reason: "a second member down would lose quorum", peers: 3, unhealthy: []int{2}, known: true, target: 1, wantWhy: "voters not healthy: bao-2"},
		{name: "5 healthy", reason: "5 voters tolerate two down", peers: 5, known: true, target: 4, want: true},
		{name: "5 with one unhealthy", reason: "every voter must be healthy before a disruptive step", peers: 5, unhealthy: []int{0}, known: true, target: 4, wantWhy: "voters not healthy: bao-0"},
		{name: "7 healthy", reason: "7 voters tolerate three down", peers: 7, known: true, target: 3, want: true},
		{name: "1 member", reason: "a single voter cannot go down without losing quorum", peers: 1, known: true, target: 0, wantWhy: "below a majority of 1"},
		{name: "autopilot unknown", reason: "right after an election autopilot is not trusted", peers: 3, known: false, target: 1, wantWhy: "autopilot state is unknown"},
		{name: "target is a non-voter", reason: "taking down a non-voter costs no quorum", peers: 3, nonVoters: []int{1}, known: true, target: 1, want: true},
		{name: "autopilot unhealthy names the member", reason: "a hold must say which member keeps autopilot unhealthy",
			peers: 3, unhealthy: []int{2}, apUnhealthy: true, known: true, target: 1, wantWhy: "autopilot reports the cluster unhealthy; not healthy: bao-2"},
		{name: "an unhealthy member's clock is off", reason: "a member whose clock is minutes off rejects its peers' certificates: the hold says so, and what to fix",
			peers: 3, unhealthy: []int{2}, apUnhealthy: true, skews: map[int]time.Duration{2: -10 * time.Minute}, known: true, target: 1,
			wantWhy: "not healthy: bao-2 (its clock is 10m0s behind baokeeper's: OpenBao checks certificate and token lifetimes against it; fix the time synchronization of its node)"},
		{name: "a healthy member's clock is off", reason: "a restart or a hand-off with a member minutes off its peers' clocks cost a second election or a member that never rejoined on the rig: no member goes down until it is set right",
			peers: 3, skews: map[int]time.Duration{2: -10 * time.Minute}, known: true, target: 1,
			wantWhy: "members' clocks are off: bao-2 (its clock is 10m0s behind baokeeper's"},
		{name: "a voter crashed after its gates held", reason: "autopilot calls a dead voter healthy for 10 s; with no settle time the next pod must not go while the one just replaced is down",
			peers: 3, notReady: []int{2}, known: true, target: 1, wantWhy: "voters autopilot still calls healthy are not Ready or did not answer as unsealed: bao-2"},
		{name: "a voter did not answer", reason: "a member that stopped answering counts as down until a pass reads it unsealed",
			peers: 5, silent: []int{3}, known: true, target: 1, wantWhy: "did not answer as unsealed: bao-3"},
		{name: "the member itself is not Ready", reason: "the member about to go down is judged by autopilot alone, as before",
			peers: 3, notReady: []int{1}, known: true, target: 1, want: true},
		{name: "a voter the leader has not heard from since it restarted", reason: "autopilot calls a member that restarted quickly healthy on its old instance's contact; found on the rig, the next deletion lost the quorum",
			peers: 3, unheard: []int{2}, known: true, target: 1, wantWhy: "the leader's Raft has not reached bao-2 since it restarted"},
		{name: "a restarted voter autopilot heard from but the leader's Raft has not reached", reason: "autopilot's contact is the member's echo to the active node; the leader may still dial its old address (found in CI: the next deletion lost the quorum)",
			peers: 3, replication: map[int]operation.Replication{2: operation.ReplicationNone}, known: true, target: 1,
			wantWhy: "the leader's Raft has not reached bao-2 since it restarted"},
		{name: "a restarted voter whose metrics did not answer", reason: "no proof is no proof",
			peers: 3, replication: map[int]operation.Replication{2: operation.ReplicationUnknown}, known: true, target: 1,
			wantWhy: "the leader's Raft has not reached bao-2"},
		{name: "a restarted voter the leader's Raft reached", reason: "its own process handled AppendEntries: the quorum counts on it",
			peers: 3, replication: map[int]operation.Replication{2: operation.ReplicationSeen}, known: true, target: 1, want: true},
		{name: "the leader's Raft reached it though autopilot's contact looks old", reason: "the member's own metrics are the proof that counts",
			peers: 3, unheard: []int{2}, replication: map[int]operation.Replication{2: operation.ReplicationSeen}, known: true, target: 1, want: true},
		{name: "the member itself not heard since it restarted", reason: "the member about to go down is not a voter the quorum counts on after",
			peers: 3, unheard: []int{1}, known: true, target: 1, want: true},
		{name: "a voter's clock is off", reason: "the voters list says the same", peers: 3, unhealthy: []int{0}, skews: map[int]time.Duration{0: 3 * time.Minute}, known: true, target: 1,
			wantWhy: "voters not healthy: bao-0 (its clock is 3m0s ahead of baokeeper's"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := healthyCluster(tc.peers, 0)
			c.AutopilotKnown = tc.known
			for _, i := range tc.unhealthy {
				c.Members[i].Healthy = false
			}
			for _, i := range tc.nonVoters {
				c.Members[i].Voter = false
			}
			c.AutopilotHealthy = !tc.apUnhealthy
			for i, d := range tc.skews {
				c.Members[i].ClockOffset = d
			}
			for _, i := range tc.notReady {
				c.Members[i].PodReady = false
			}
			for _, i := range tc.silent {
				c.Members[i].Version = ""
			}
			for _, i := range tc.unheard {
				c.Members[i].ReadySince, c.Members[i].LastContact = c.Now.Add(-time.Second), 4*time.Second
			}
			for i, r := range tc.replication {
				c.Members[i].ReadySince, c.Members[i].Replication = c.Now.Add(-time.Second), r
			}
			ok, why := QuorumBudget(c, fmt.Sprintf("bao-%d", tc.target))
			g.Expect(ok).To(Equal(tc.want), tc.reason)
			if tc.wantWhy != "" {
				g.Expect(why).To(ContainSubstring(tc.wantWhy), tc.reason)
			}
		})
	}
}

func TestPlanPutsTheLeaderLast(t *testing.T) {
	cases := []struct {
		peers, leader int
		want          []string
	}{
		{3, 0, []string{"bao-2", "bao-1", "bao-0"}},
		{3, 2, []string{"bao-1", "bao-0", "bao-2"}},
		{5, 2, []string{"bao-4", "bao-3", "bao-1", "bao-0", "bao-2"}},
	}
	for _, tc := range cases {
		NewWithT(t).Expect(Plan(healthyCluster(tc.peers, tc.leader))).To(Equal(tc.want))
	}
}

func step(action baov1.StepAction, pod string, started time.Time) *baov1.UpgradeStep {
	st := metav1.NewTime(started)
	return &baov1.UpgradeStep{Action: action, Pod: pod, StartedAt: &st}
}

func TestDecide(t *testing.T) {
	plan := &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}
	base := func() Input {
		return Input{Upgrade: &baov1.UpgradeStatus{Plan: plan.DeepCopy()}, Cluster: healthyCluster(3, 0), TargetImage: newImage,
			TargetVersion: "2.4.1", TemplateImage: newImage, StepTimeout: 10 * time.Minute, SettleTime: 10 * time.Second, MaxLag: 100}
	}
	cases := []decideCase{
		{name: "template first", reason: "nothing restarts until the template carries the target image",
			mutate: func(in *Input) { in.TemplateImage = oldImage }, wantAction: ActionUpdateTemplate},
		{name: "begin first follower", reason: "followers go first, highest ordinal first",
			mutate: func(*Input) {}, wantAction: ActionBeginStep, wantPod: "bao-2"},
		{name: "a plan whose first member leads now", reason: "found on the rig: a rollout planned while a follower was frozen put the leader first; stepping it down then handed leadership to a member not replaced yet, and a second hand-off followed. The leader goes last, by what is observed",
			mutate: func(in *Input) { in.Cluster.Leader = "bao-2" }, wantAction: ActionBeginStep, wantPod: "bao-1"},
		{name: "leadership moved to the next planned member", reason: "an election nobody planned made bao-1 the leader: bao-0 goes before it",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2"}
				in.Cluster.Leader = "bao-1"
			}, wantAction: ActionBeginStep, wantPod: "bao-0"},
		{name: "the leader is the last member left", reason: "once every other member is done, the leader's step begins",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Cluster.Leader = "bao-0"
			}, wantAction: ActionBeginStep, wantPod: "bao-0"},
		{name: "paused at a safe point", reason: "pause holds between members, naming the next one",
			mutate: func(in *Input) { in.Paused = true }, wantAction: ActionHold, wantPod: "bao-2", wantText: "paused by spec.upgrade.paused before bao-2"},
		{name: "held by a closed maintenance window at a safe point", reason: "the window's hold says why and until when, naming the next member",
			mutate: func(in *Input) {
				in.Paused, in.PauseReason = true, "the maintenance window closed (spec.upgrade.windowEnd: Pause): holding until the next opens at 2026-12-04T02:00:00Z (in 14h0m0s)"
			}, wantAction: ActionHold, wantPod: "bao-2", wantText: "holding until the next opens at 2026-12-04T02:00:00Z (in 14h0m0s) before bao-2"},
		{name: "paused mid-member finishes the member", reason: "a member already taken down is finished before holding",
			mutate: func(in *Input) {
				in.Paused = true
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
			}, wantAction: ActionDeletePod, wantPod: "bao-2"},
		{name: "unhealthy cluster blocks the next member", reason: "invariant 1: no disruptive step without a quorum budget",
			mutate:     func(in *Input) { in.Cluster.Members[1].Healthy = false; in.Cluster.AutopilotHealthy = false },
			wantAction: ActionWait, wantPod: "bao-2", wantText: "autopilot reports the cluster unhealthy"},
		{name: "delete an old pod", reason: "the intent is persisted; the pod still runs the old image",
			mutate:     func(in *Input) { in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0) },
			wantAction: ActionDeletePod, wantPod: "bao-2"},
		{name: "a member failed after the step began holds the deletion", reason: "invariant 1 is checked on the pass that acts, not only when the step began",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Cluster.Members[0].Healthy = false
			}, wantAction: ActionWait, wantPod: "bao-2", wantText: "waiting to delete bao-2: voters not healthy: bao-0"},
		{name: "intent found with its outcome", reason: "after a crash, a pod already on the new image is gated, not deleted again",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				m := &in.Cluster.Members[2]
				m.Image, m.PodReady, m.Version, m.Voter = newImage, true, "2.4.1", false
			}, wantAction: ActionWait, wantPod: "bao-2", wantText: "waiting for bao-2 to rejoin Raft as a voter"},
		{name: "lagging member", reason: "gates name how far behind the member is",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				m := &in.Cluster.Members[2]
				m.Image, m.Version, m.LastIndex = newImage, "2.4.1", 100
			}, wantAction: ActionWait, wantText: "index 400 behind, limit 100"},
		{name: "gates pass, settle", reason: "the settle time starts when every gate first held",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Cluster.Members[2].Image, in.Cluster.Members[2].Version = newImage, "2.4.1"
			}, wantAction: ActionGatesPassed, wantPod: "bao-2"},
		{name: "settled", reason: "after settleTime the member is complete",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				passed := metav1.NewTime(t0.Add(-11 * time.Second))
				in.Upgrade.CurrentStep.GatesPassedAt = &passed
				in.Cluster.Members[2].Image, in.Cluster.Members[2].Version = newImage, "2.4.1"
			}, wantAction: ActionCompleteMember, wantPod: "bao-2"},
		{name: "step timeout", reason: "invariant 3: a gate that does not pass in time fails the upgrade naming the member and the members not started",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0.Add(-11*time.Minute))
				in.Upgrade.CurrentStep.WaitingFor = "waiting for bao-2 to become Ready"
			}, wantAction: ActionFail, wantPod: "bao-2", wantText: "not started: bao-1, bao-0"},
		{name: "settling past the step timeout completes", reason: "bug: settleTime >= stepTimeout failed every member after it passed its gates; the settle time is not counted",
			mutate: func(in *Input) {
				in.StepTimeout, in.SettleTime = time.Minute, 2*time.Minute
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0.Add(-3*time.Minute))
				passed := metav1.NewTime(t0.Add(-2*time.Minute - time.Second))
				in.Upgrade.CurrentStep.GatesPassedAt = &passed
				in.Cluster.Members[2].Image, in.Cluster.Members[2].Version = newImage, "2.4.1"
			}, wantAction: ActionCompleteMember, wantPod: "bao-2"},
		{name: "settling within the step timeout waits", reason: "the settle time still runs out in full",
			mutate: func(in *Input) {
				in.StepTimeout, in.SettleTime = time.Minute, 2*time.Minute
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0.Add(-90*time.Second))
				passed := metav1.NewTime(t0.Add(-80 * time.Second))
				in.Upgrade.CurrentStep.GatesPassedAt = &passed
				in.Cluster.Members[2].Image, in.Cluster.Members[2].Version = newImage, "2.4.1"
			}, wantAction: ActionWait, wantPod: "bao-2", wantText: "settling for 40s more"},
		{name: "a member re-created on the target is not replaced", reason: "bug: a member already on the target was replaced (or stepped down) again; it is only gated",
			mutate: func(in *Input) {
				in.Cluster.Members[2].Image, in.Cluster.Members[2].Version = newImage, "2.4.1"
			}, wantAction: ActionBeginStep, wantPod: "bao-2", wantText: "bao-2 already runs 2.4.1"},
		{name: "a leader re-created on the target is not stepped down", reason: "bug: the old leader's pod was deleted by hand, came back on the target and was elected again; a step-down would be a needless election",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Cluster.Members[0].Image, in.Cluster.Members[0].Version = newImage, "2.4.1"
			}, wantAction: ActionGatesPassed, wantPod: "bao-0"},
		{name: "an upgraded member is started while paused", reason: "gating a member that already runs the target disrupts nothing",
			mutate: func(in *Input) {
				in.Paused = true
				in.Cluster.Members[2].Image, in.Cluster.Members[2].Version = newImage, "2.4.1"
			}, wantAction: ActionBeginStep, wantPod: "bao-2"},
		{name: "a replaced member back as a non-voter waits to be stable", reason: "a member that lost its data joins again as a non-voter; autopilot may still promote one that joined normally",
			mutate: func(in *Input) {
				in.CanPromote = true
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				m := &in.Cluster.Members[2]
				m.Image, m.Version, m.Voter, m.StableSince = newImage, "2.4.1", false, t0.Add(-5*time.Second)
			}, wantAction: ActionWait, wantPod: "bao-2", wantText: "it is a non-voter"},
		{name: "a replaced member back as a non-voter is promoted", reason: "found by review: with joins as non-voters, a member that lost its volume mid-upgrade would wait on the Voter gate until its step timed out",
			mutate: func(in *Input) {
				in.CanPromote = true
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				m := &in.Cluster.Members[2]
				m.Image, m.Version, m.Voter, m.StableSince = newImage, "2.4.1", false, t0.Add(-PromoteAfter)
			}, wantAction: ActionPromote, wantPod: "bao-2"},
		{name: "a non-voter that lags is not promoted", reason: "it votes only once caught up",
			mutate: func(in *Input) {
				in.CanPromote = true
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				m := &in.Cluster.Members[2]
				m.Image, m.Version, m.Voter, m.StableSince, m.LastIndex = newImage, "2.4.1", false, t0.Add(-time.Minute), 10
			}, wantAction: ActionWait, wantText: "non-voter"},
		{name: "a failed promote Job is retried after the cooldown", reason: "Jobs are retried, bounded",
			mutate: func(in *Input) {
				in.CanPromote = true
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Upgrade.CurrentStep.Attempts = 1
				in.PromoteJob = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-3 * time.Second), Message: "connection refused"}
				m := &in.Cluster.Members[2]
				m.Image, m.Version, m.Voter, m.StableSince = newImage, "2.4.1", false, t0.Add(-time.Minute)
			}, wantAction: ActionWait, wantText: "retrying after 10 s"},
		{name: "promote attempts exhausted", reason: "a member that cannot be promoted fails the upgrade, naming it",
			mutate: func(in *Input) {
				in.CanPromote = true
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Upgrade.CurrentStep.Attempts = 3
				in.PromoteJob = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-time.Minute), Message: "403"}
				m := &in.Cluster.Members[2]
				m.Image, m.Version, m.Voter, m.StableSince = newImage, "2.4.1", false, t0.Add(-time.Minute)
			}, wantAction: ActionFail, wantPod: "bao-2", wantText: "still a non-voter after 3 executor Job attempts"},
		{name: "failed upgrade waits for retry", reason: "after a failure nothing moves until a person retries",
			mutate: func(in *Input) {
				in.Upgrade.Failure = &baov1.UpgradeFailure{Reason: ReasonStepTimeout, Pod: "bao-2"}
			}, wantAction: ActionWait, wantText: "baokeeper.dev/retry"},
		{name: "leader steps down first", reason: "invariant 2: the leader hands off before its pod goes",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
			}, wantAction: ActionStepDown, wantPod: "bao-0"},
		{name: "a member failed while the leader's step began holds the step-down", reason: "the leader's pod goes right after its step-down: its budget must hold now",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Cluster.Members[2].Healthy = false
			}, wantAction: ActionWait, wantPod: "bao-0", wantText: "waiting to step bao-0 down: voters not healthy: bao-2"},
		{name: "a member failed before a step-down retry holds the retry", reason: "the budget is checked before every attempt",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Upgrade.CurrentStep.Attempts = 1
				in.StepDownJob = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-11 * time.Second)}
				in.Cluster.Members[1].Healthy = false
			}, wantAction: ActionWait, wantText: "waiting to step bao-0 down again: voters not healthy: bao-1"},
		{name: "step-down verified", reason: "leadership moved to an upgraded member",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Cluster.Leader = "bao-2"
				in.Cluster.Members[2].Version = "2.4.1"
			}, wantAction: ActionStepDownVerified, wantPod: "bao-0"},
		{name: "leadership moved by an election onto a member not yet upgraded", reason: "the step's member is a follower now and nothing else will move leadership again: waiting would never end; the new leader hands off at its own step",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Cluster.Leader = "bao-1"
			}, wantAction: ActionStepDownVerified, wantPod: "bao-0", wantText: "bao-1 leads on the old version and hands off at its own step"},
		{name: "leadership moved onto a member not yet upgraded while the step-down Job runs", reason: "the Job's outcome does not matter once the member is a follower",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Upgrade.CurrentStep.Attempts = 1
				in.StepDownJob = operation.Job{Phase: operation.JobRunning}
				in.Cluster.Leader = "bao-1"
			}, wantAction: ActionStepDownVerified, wantPod: "bao-0"},
		{name: "step-down retry waits for the cooldown", reason: "a second step-down within 10 s is wasted",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Upgrade.CurrentStep.Attempts = 1
				in.StepDownJob = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-3 * time.Second), Message: "connection refused"}
			}, wantAction: ActionWait, wantText: "10 s cooldown"},
		{name: "step-down retried after the cooldown", reason: "a failed Job is retried",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Upgrade.CurrentStep.Attempts = 1
				in.StepDownJob = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-11 * time.Second)}
			}, wantAction: ActionStepDown, wantPod: "bao-0"},
		{name: "step-down attempts exhausted", reason: "retries are bounded",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepTransferLeadership, "bao-0", t0)
				in.Upgrade.CurrentStep.Attempts = MaxStepDownAttempts
				in.StepDownJob = operation.Job{Phase: operation.JobFailed, FinishedAt: t0.Add(-11 * time.Second)}
			}, wantAction: ActionFail, wantText: "still the leader after 3 step-down attempts"},
		{name: "never delete a leader", reason: "leadership came back to a member that still runs the old image",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-0", t0)
			}, wantAction: ActionBeginStep, wantPod: "bao-0"},
		{name: "complete", reason: "every planned member done and every member on the target",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1", "bao-0"}
				for i := range in.Cluster.Members {
					in.Cluster.Members[i].Image, in.Cluster.Members[i].Version = newImage, "2.4.1"
				}
			}, wantAction: ActionComplete},
		{name: "not complete while a member reports the old version", reason: "currentVersion advances only when every member runs the target",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1", "bao-0"}
			}, wantAction: ActionWait, wantText: "to report 2.4.1"},
	}
	runDecideCases(t, base, cases)
}

func TestRecordKeepsStartTimeWhenLeadershipComesBack(t *testing.T) {
	g := NewWithT(t)
	c := healthyCluster(3, 0)
	up := &baov1.UpgradeStatus{CurrentStep: step(StepReplaceMember, "bao-0", t0.Add(-time.Minute))}
	Record(up, Decision{Action: ActionBeginStep, Pod: "bao-0"}, c, newImage, baov1.LeaderHandoffStepDown)
	g.Expect(up.CurrentStep.Action).To(Equal(StepTransferLeadership))
	g.Expect(up.CurrentStep.StartedAt.Time).To(Equal(t0.Add(-time.Minute)), "the step timeout counts from the first attempt")
}

func TestRecordKeepsWhatAFailedStepWaitedFor(t *testing.T) {
	g := NewWithT(t)
	c := healthyCluster(3, 0)
	up := &baov1.UpgradeStatus{Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}},
		CurrentStep: step(StepReplaceMember, "bao-2", t0.Add(-time.Hour))}
	up.CurrentStep.WaitingFor = "waiting for bao-2 to become Ready (initialized and unsealed)"
	in := Input{Upgrade: up, Cluster: c, TargetImage: newImage, TargetVersion: "2.4.1", TemplateImage: newImage, StepTimeout: time.Minute}
	d := Decide(in)
	g.Expect(d.Action).To(Equal(ActionFail))
	Record(up, d, c, newImage, "")
	g.Expect(up.Failure.Message).To(ContainSubstring("last waiting for bao-2 to become Ready"))
	again := Decide(in)
	Record(up, again, c, newImage, "")
	g.Expect(up.CurrentStep.WaitingFor).To(Equal("waiting for bao-2 to become Ready (initialized and unsealed)"),
		"the failed step keeps what it waited for, for the next failure message")
}

func TestSettleTimeSurvivesTheStatusRoundTrip(t *testing.T) {
	g := NewWithT(t)
	passed := t0.Add(700 * time.Millisecond)
	up := &baov1.UpgradeStatus{CurrentStep: step(StepReplaceMember, "bao-2", t0)}
	c := healthyCluster(3, 0)
	c.Now = passed
	Record(up, Decision{Action: ActionGatesPassed, Pod: "bao-2"}, c, newImage, "")
	// What a later pass reads back: metav1.Time is serialized to the second.
	b, err := up.CurrentStep.GatesPassedAt.MarshalJSON()
	g.Expect(err).NotTo(HaveOccurred())
	var back metav1.Time
	g.Expect(back.UnmarshalJSON(b)).To(Succeed())
	g.Expect(back.Time).NotTo(BeTemporally("<", passed), "the settle time never starts before the gates passed")
	g.Expect(back.Time.Sub(passed)).To(BeNumerically("<", time.Second))
}

func TestStepActionForPlansOnWhatIsObserved(t *testing.T) {
	g := NewWithT(t)
	c := healthyCluster(3, 1)
	g.Expect(StepActionFor(c, "bao-1", newImage, newVersion, baov1.LeaderHandoffStepDown)).To(Equal(StepTransferLeadership), "a leader on the old image hands off first")
	g.Expect(StepActionFor(c, "bao-2", newImage, newVersion, baov1.LeaderHandoffStepDown)).To(Equal(StepReplaceMember), "a follower is replaced")
	c.Members[1].Image = newImage
	g.Expect(StepActionFor(c, "bao-1", newImage, newVersion, baov1.LeaderHandoffStepDown)).To(Equal(StepReplaceMember), "a leader already on the target image is only gated")
}

// upgradedBut returns n members with every one but the leader on the target.
func upgradedBut(n, leader int) *operation.Cluster {
	c := healthyCluster(n, leader)
	for i := range c.Members {
		if i != leader {
			c.Members[i].Image, c.Members[i].Version = newImage, newVersion
		}
	}
	return c
}

func TestStepActionForTheShutdownHandoff(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		mutate func(c *operation.Cluster)
		want   baov1.StepAction
	}{
		{name: "every other member upgraded", reason: "any voter that takes over runs the target: shut the leader down",
			want: StepShutdownLeader},
		{name: "a member still on the old image", reason: "an election nobody planned put this leader in charge mid-plan: step down, as before",
			mutate: func(c *operation.Cluster) { c.Members[2].Image, c.Members[2].Version = oldImage, "2.4.0" }, want: StepTransferLeadership},
		{name: "an upgraded member not a voter yet", reason: "it could not take over: step down instead of waiting on a guess",
			mutate: func(c *operation.Cluster) { c.Members[2].Voter = false }, want: StepTransferLeadership},
		{name: "an upgraded member autopilot does not call healthy yet, that follows the leader by its own read",
			reason: "its gates passed on that read (Cluster.Follows); choosing a step-down here handed leadership to a member a rollout had not replaced yet, three elections on the rig",
			mutate: func(c *operation.Cluster) {
				c.Members[2].Healthy = false
				c.LeaderAddress, c.LeaderCommitted = "https://bao-0:8200", 500
				c.Members[2].LeaderAddress, c.Members[2].AppliedIndex = "https://bao-0:8200", 500
			},
			want: StepShutdownLeader},
		{name: "an upgraded member autopilot does not call healthy, with no read of its own", reason: "nothing says it could take over: step down",
			mutate: func(c *operation.Cluster) { c.Members[2].Healthy = false }, want: StepTransferLeadership},
		{name: "the leader already on the target", reason: "nothing to replace",
			mutate: func(c *operation.Cluster) { c.Members[0].Image = newImage }, want: StepReplaceMember},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := upgradedBut(3, 0)
			if tc.mutate != nil {
				tc.mutate(c)
			}
			NewWithT(t).Expect(StepActionFor(c, "bao-0", newImage, newVersion, baov1.LeaderHandoffShutdown)).To(Equal(tc.want), tc.reason)
		})
	}
	NewWithT(t).Expect(StepActionFor(upgradedBut(3, 0), "bao-0", newImage, newVersion, baov1.LeaderHandoffStepDown)).
		To(Equal(StepTransferLeadership), "StepDown keeps the step-down Job")
	NewWithT(t).Expect(StepActionFor(upgradedBut(3, 0), "bao-0", newImage, newVersion, "")).
		To(Equal(StepShutdownLeader), "empty is the default, Shutdown")
}

func TestDecideShutdownLeader(t *testing.T) {
	cases := []struct {
		name       string
		reason     string
		mutate     func(c *operation.Cluster)
		want       Action
		wantWaitOn string
	}{
		{name: "every other member a healthy voter on the target", reason: "delete the leader's pod: its shutdown hands over",
			want: ActionDeletePod, wantWaitOn: "graceful shutdown hands leadership"},
		{name: "autopilot read right after an election", reason: "nothing disruptive on an untrustworthy read",
			mutate: func(c *operation.Cluster) { c.AutopilotKnown = false }, want: ActionWait, wantWaitOn: "trustworthy read"},
		{name: "another member unhealthy", reason: "the successor must be a healthy voter on the target",
			mutate: func(c *operation.Cluster) { c.Members[1].Healthy = false }, want: ActionWait, wantWaitOn: "healthy voter on 2.4.1"},
		{name: "leadership moved to an upgraded member meanwhile", reason: "a follower now: it is replaced the same way",
			mutate: func(c *operation.Cluster) { c.Leader = "bao-2" }, want: ActionDeletePod, wantWaitOn: "a former leader"},
		{name: "pod gone, no leader yet", reason: "wait for the election to finish",
			mutate: func(c *operation.Cluster) { c.Members[0].PodExists, c.Leader = false, "" }, want: ActionWait, wantWaitOn: "waiting for a new leader"},
		{name: "pod back on the target, a leader on the target", reason: "then only the member's own gates remain; with settleTime 0s it is done in this pass",
			mutate: func(c *operation.Cluster) {
				c.Members[0].Image, c.Members[0].Version, c.Leader = newImage, newVersion, "bao-1"
			}, want: ActionCompleteMember},
		{name: "pod terminating", reason: "the deletion is under way: never delete twice",
			mutate: func(c *operation.Cluster) { c.Members[0].PodTerminating, c.Leader = true, "" }, want: ActionWait, wantWaitOn: "waiting for a new leader"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := upgradedBut(3, 0)
			if tc.mutate != nil {
				tc.mutate(c)
			}
			start := metav1.NewTime(t0.Add(-time.Minute))
			up := &baov1.UpgradeStatus{TargetVersion: newVersion, Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}},
				CompletedPods: []string{"bao-2", "bao-1"}, CurrentStep: &baov1.UpgradeStep{Action: StepShutdownLeader, Pod: "bao-0", StartedAt: &start}}
			d := Decide(Input{Upgrade: up, Cluster: c, TargetImage: newImage, TargetVersion: newVersion, TemplateImage: newImage,
				StepTimeout: 10 * time.Minute, MaxLag: 100, LeaderHandoff: baov1.LeaderHandoffShutdown})
			g.Expect(d.Action).To(Equal(tc.want), "%s: %s", tc.reason, d.WaitingFor)
			g.Expect(d.WaitingFor).To(ContainSubstring(tc.wantWaitOn), tc.reason)
		})
	}
}

func TestSettleTimeZeroCompletesTheMemberInThePassItsGatesPass(t *testing.T) {
	for _, tc := range []struct {
		settle time.Duration
		want   Action
	}{{0, ActionCompleteMember}, {2 * time.Second, ActionGatesPassed}} {
		c := upgradedBut(3, 0)
		start := metav1.NewTime(t0.Add(-time.Minute))
		up := &baov1.UpgradeStatus{TargetVersion: newVersion, Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}},
			CompletedPods: []string{"bao-2"}, CurrentStep: &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-1", StartedAt: &start}}
		d := Decide(Input{Upgrade: up, Cluster: c, TargetImage: newImage, TargetVersion: newVersion, TemplateImage: newImage,
			StepTimeout: 10 * time.Minute, SettleTime: tc.settle, MaxLag: 100})
		NewWithT(t).Expect(d.Action).To(Equal(tc.want), "settleTime %s: %s", tc.settle, d.WaitingFor)
	}
}

// withRevisions puts the StatefulSet on revision rev (observed when current) and
// every member's pod on podRev.
func withRevisions(c *operation.Cluster, rev, podRev string, current bool) {
	c.StatefulSet = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	c.StatefulSet.Status.UpdateRevision = rev
	c.StatefulSet.Status.ObservedGeneration = 2
	if current {
		c.StatefulSet.Status.ObservedGeneration = 3
	}
	for i := range c.Members {
		c.Members[i].Revision = podRev
	}
}

// A rollout restarts members on the image they run: a member counts as done only on
// the StatefulSet's current revision, and no pod is deleted before the StatefulSet
// controller has seen the template (else it comes back on the old revision).
func TestDecideRollout(t *testing.T) {
	plan := &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}
	base := func() Input {
		c := healthyCluster(3, 0)
		withRevisions(c, "bao-new", "bao-old", true)
		return Input{Upgrade: &baov1.UpgradeStatus{Kind: baov1.OperationRollout, Plan: plan.DeepCopy()}, Cluster: c, TargetImage: oldImage,
			TargetVersion: "2.4.0", TemplateImage: oldImage, StepTimeout: 10 * time.Minute, MaxLag: 100, LeaderHandoff: baov1.LeaderHandoffShutdown}
	}
	cases := []decideCase{
		{name: "same image, old revision: restart it", reason: "the image matches, the template does not",
			mutate:     func(in *Input) { in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0) },
			wantAction: ActionDeletePod, wantPod: "bao-2"},
		{name: "template not seen yet", reason: "invariant 9: a pod deleted now would come back on the old revision",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Cluster.StatefulSet.Status.ObservedGeneration = 2
			},
			wantAction: ActionWait, wantPod: "bao-2", wantText: "waiting for the StatefulSet controller to see the new pod template before deleting bao-2 (observedGeneration 2 of 3)"},
		{name: "back on the new revision: gated, then done", reason: "with settleTime 0s the member completes in the pass its gates pass",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Cluster.Members[2].Revision = "bao-new"
			},
			wantAction: ActionCompleteMember, wantPod: "bao-2"},
		{name: "re-created on the old revision", reason: "a pod that came back from the old template is not done: it waits, named",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				in.Upgrade.CurrentStep.StartedAt = &metav1.Time{Time: t0}
				in.Cluster.StatefulSet.Status.ObservedGeneration = 2
			},
			wantAction: ActionWait, wantPod: "bao-2", wantText: "waiting for the StatefulSet controller"},
		{name: "a placement no node satisfies", reason: "the restarted follower stays Pending: the step waits with the scheduler's words",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0)
				m := &in.Cluster.Members[2]
				m.Revision, m.PodReady, m.Initialized, m.Version = "bao-new", false, false, ""
				m.Problem = "Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
			},
			wantAction: ActionWait, wantPod: "bao-2",
			wantText: "waiting for bao-2 to become Ready (initialized and unsealed); the pod says: Unschedulable: 0/3 nodes are available"},
		{name: "the step times out with the pod's reason", reason: "a StepTimeout carries what the pod said, not only what the step waited for",
			mutate: func(in *Input) {
				in.Upgrade.CurrentStep = step(StepReplaceMember, "bao-2", t0.Add(-11*time.Minute))
				in.Upgrade.CurrentStep.WaitingFor = "waiting for bao-2 to become Ready (initialized and unsealed); the pod says: CrashLoopBackOff (container openbao): OOMKilled"
				m := &in.Cluster.Members[2]
				m.Revision, m.PodReady = "bao-new", false
			},
			wantAction: ActionFail, wantReason: ReasonStepTimeout, wantPod: "bao-2", wantText: "the pod says: CrashLoopBackOff (container openbao): OOMKilled; upgraded: none; not started: bao-1, bao-0"},
		{name: "the leader last, shut down", reason: "followers on the new revision: the leader's graceful shutdown hands over to one of them",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Upgrade.CurrentStep = &baov1.UpgradeStep{Action: StepShutdownLeader, Pod: "bao-0", StartedAt: &metav1.Time{Time: t0}}
				in.Cluster.Members[1].Revision, in.Cluster.Members[2].Revision = "bao-new", "bao-new"
			},
			wantAction: ActionDeletePod, wantPod: "bao-0"},
		{name: "the leader waits for the others on the new revision", reason: "a follower still on the old template could take over",
			mutate: func(in *Input) {
				in.Upgrade.CompletedPods = []string{"bao-2", "bao-1"}
				in.Upgrade.CurrentStep = &baov1.UpgradeStep{Action: StepShutdownLeader, Pod: "bao-0", StartedAt: &metav1.Time{Time: t0}}
				in.Cluster.Members[2].Revision = "bao-new"
			},
			wantAction: ActionWait, wantPod: "bao-0", wantText: "waiting for every member but bao-0 to be a healthy voter"},
	}
	runDecideCases(t, base, cases)
}

// decideCase is one row of a Decide table: the input base() gives, changed by
// mutate, and the action, member and words the decision must have.
type decideCase struct {
	name, reason string
	mutate       func(*Input)
	wantAction   Action
	// wantReason is the failure's reason, checked when set.
	wantReason baov1.FailureReason
	wantPod    string
	wantText   string
}

func runDecideCases(t *testing.T, base func() Input, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			in := base()
			tc.mutate(&in)
			d := Decide(in)
			g.Expect(d.Action).To(Equal(tc.wantAction), "%s: %+v", tc.reason, d)
			if tc.wantPod != "" {
				g.Expect(d.Pod).To(Equal(tc.wantPod), tc.reason)
			}
			if tc.wantReason != "" {
				g.Expect(d.Reason).To(Equal(tc.wantReason), tc.reason)
			}
			if tc.wantText != "" {
				g.Expect(d.WaitingFor+" "+d.Message).To(ContainSubstring(tc.wantText), tc.reason)
			}
		})
	}
}

// TestBudgetWaitsForAMemberRestartedOutsideThePlan: a member that lost its data
// rejoins under its old voter entry, which autopilot shows as a healthy voter until
// its next round demotes it; no disruptive step is taken on that word.
func TestBudgetWaitsForAMemberRestartedOutsideThePlan(t *testing.T) {
	plan := &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}
	cases := []struct {
		name, reason string
		readyFor     time.Duration
		// member is the one whose pod turned Ready readyFor ago; completed says it
		// was replaced by this operation.
		member    string
		completed bool
		want      bool
		wantWhy   string
	}{
		{name: "restarted outside the plan just now", reason: "autopilot may still demote it: wait one round",
			member: "bao-1", readyFor: 4 * time.Second, wantWhy: "bao-1 restarted outside this operation and has been Ready for 4s: waiting until 12s"},
		{name: "restarted outside the plan a round ago", reason: "autopilot had its round: its role is true now",
			member: "bao-1", readyFor: 13 * time.Second, want: true},
		{name: "replaced by this operation", reason: "the operation's own step gated it already: no extra wait",
			member: "bao-2", completed: true, readyFor: 2 * time.Second, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			in := Input{Upgrade: &baov1.UpgradeStatus{Plan: plan.DeepCopy()}, Cluster: healthyCluster(3, 0), TargetImage: newImage,
				TargetVersion: "2.4.1", TemplateImage: newImage, StepTimeout: 10 * time.Minute, SettleTime: 10 * time.Second, MaxLag: 100}
			if tc.completed {
				in.Upgrade.CompletedPods = []string{tc.member}
			}
			in.Cluster.Member(tc.member).ReadySince = t0.Add(-tc.readyFor)
			ok, why := budget(in, "bao-0")
			g.Expect(ok).To(Equal(tc.want), tc.reason)
			g.Expect(why).To(ContainSubstring(tc.wantWhy), tc.reason)
		})
	}
}
