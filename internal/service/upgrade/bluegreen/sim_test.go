package bluegreen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// server is one simulated OpenBao member.
type server struct {
	name              string
	ordinal           int
	pod, ready        bool
	inRaft, voter     bool
	healthy           bool
	version, image    string
	everVotedTooEarly bool
}

// world is a simulated cluster that answers the actions of Decide the way
// OpenBao and Kubernetes do, one pass at a time. Executor Jobs finish within
// the pass that creates them; failures are injected by name.
type world struct {
	t         *testing.T
	now       time.Time
	blue      []*server
	green     []*server
	leader    string
	elections int
	leaders   []string
	greenSts  bool
	blueSts   bool
	clientSvc string // "blue" or "green"
	blueVols  int
	greenVols int
	jobs      map[string]operation.Job
	failJobs  map[string]int // job key prefix -> failures left
	// earlyVoter is a green member autopilot promotes on its own as it joins (OpenBao
	// lost it from its permanent non-voter list).
	earlyVoter string
	status     *baov1.BlueGreenStatus
	serving    string
	up         *baov1.UpgradeStatus
	completed  bool
	rolledBack bool
	breakGlass *operation.Action
	settings   Settings
	trace      []string
}

func newWorld(t *testing.T, replicas, leader int) *world {
	w := &world{t: t, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), blueSts: true, clientSvc: "blue", blueVols: replicas,
		jobs: map[string]operation.Job{}, failJobs: map[string]int{}, serving: "bao",
		up: &baov1.UpgradeStatus{Strategy: baov1.BlueGreenStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
			TargetImage: "openbao/openbao:2.4.1", ID: "1a2b3c4d"}}
	for i := range replicas {
		w.blue = append(w.blue, &server{name: fmt.Sprintf("bao-%d", i), ordinal: i, pod: true, ready: true, inRaft: true, voter: true,
			healthy: true, version: "2.4.0", image: "openbao/openbao:2.4.0"})
	}
	w.leader = w.blue[leader].name
	w.settings = Settings{MinSync: 5 * time.Second, PhaseTimeout: 10 * time.Minute, MaxLag: 10, AutoPromote: true, MaxJobFailures: 3}
	return w
}

func (w *world) all() []*server { return slices.Concat(w.blue, w.green) }

func (w *world) find(name string) *server {
	for _, s := range w.all() {
		if s.name == name {
			return s
		}
	}
	return nil
}

func member(s *server) operation.Member {
	return operation.Member{Name: s.name, Ordinal: s.ordinal, PodExists: s.pod, PodReady: s.ready, Image: s.image,
		Initialized: s.ready, Version: s.version, InRaft: s.inRaft, Voter: s.voter, Healthy: s.healthy, LastIndex: 100}
}

func (w *world) observe() *operation.Cluster {
	c := &operation.Cluster{Now: w.now, Leader: w.leader, AutopilotKnown: true, AutopilotHealthy: true, LeaderIndex: 100}
	for _, s := range w.blue {
		if s.pod || s.inRaft {
			c.Members = append(c.Members, member(s))
		}
	}
	for _, s := range w.green {
		c.Green = append(c.Green, member(s))
	}
	if w.greenSts {
		c.GreenStatefulSet = &appsv1StatefulSet
	}
	return c
}

func (w *world) input() Input {
	c := w.observe()
	in := Input{Name: "bao", Namespace: "ns", Upgrade: w.up, Status: w.status, Cluster: c, Serving: w.serving, BlueRevision: "bao-abc",
		GreenName: "bao-1a2b3c4d", Replicas: int32(len(w.blue)), BlueExists: w.blueSts, BlueVolumes: w.blueVols,
		ClientSelectsGreen: w.clientSvc == "green", GreenExists: w.greenSts, GreenVolumes: w.greenVols,
		Settings: w.settings}
	if st := w.status; st != nil && st.CurrentStep != nil {
		in.StepJob = w.jobs[jobKey(st.CurrentStep)]
		in.StepJobName = jobKey(st.CurrentStep)
	}
	return in
}

func jobKey(st *baov1.UpgradeStep) string {
	return fmt.Sprintf("%s/%s/%d", st.Action, st.Pod, st.Attempts)
}

// act carries out a decision's action on the world.
func (w *world) act(d Decision) {
	switch d.Kind {
	case operation.KindApply:
		switch d.Object {
		case operation.ObjectGreenStatefulSet:
			w.greenSts, w.greenVols = true, len(w.blue)
			for i := range len(w.blue) {
				name := fmt.Sprintf("bao-1a2b3c4d-%d", i)
				w.green = append(w.green, &server{name: name, ordinal: i, pod: true, ready: true,
					inRaft: true, voter: name == w.earlyVoter, healthy: true, version: "2.4.1", image: "openbao/openbao:2.4.1"})
			}
		case operation.ObjectClientService:
			if w.serving != "bao-1a2b3c4d" {
				w.t.Fatalf("the client Service was switched before status.statefulSet moved to green")
			}
			w.clientSvc = "green"
		default:
			w.t.Fatalf("unexpected apply of %s", d.Object)
		}
	case operation.KindCreateJob:
		st := w.status.CurrentStep
		key := jobKey(st)
		if _, ok := w.jobs[key]; ok {
			return // idempotent: the Job exists
		}
		for prefix, n := range w.failJobs {
			if n > 0 && strings.HasPrefix(key, prefix) {
				w.failJobs[prefix] = n - 1
				w.jobs[key] = operation.Job{Phase: operation.JobFailed, FinishedAt: w.now, Message: "injected failure"}
				return
			}
		}
		w.runJob(d.Job, st.Pod)
		w.jobs[key] = operation.Job{Phase: operation.JobSucceeded, FinishedAt: w.now}
	case operation.KindDelete:
		switch d.Object {
		case operation.ObjectBlueStatefulSet:
			w.blueSts = false
			for _, s := range w.blue {
				s.pod, s.ready = false, false
			}
		case operation.ObjectBlueVolumes:
			w.blueVols = 0
		case operation.ObjectGreenStatefulSet:
			w.greenSts = false
			for _, s := range w.green {
				if s.inRaft {
					w.t.Fatalf("deleted green's StatefulSet while %s is in Raft", s.name)
				}
				s.pod, s.ready = false, false
			}
		case operation.ObjectGreenVolumes:
			w.greenVols = 0
		default:
			w.t.Fatalf("unexpected delete of %s", d.Object)
		}
	}
}

func (w *world) runJob(kind operation.JobKind, name string) {
	s := w.find(name)
	switch kind {
	case operation.JobPromote:
		if !strings.HasPrefix(name, "bao-1a2b3c4d-") && !IsRollback(w.status.Phase) {
			w.t.Fatalf("promoted blue member %s outside a rollback (invariant 6: blue is never promoted again)", name)
		}
		s.voter = true
	case operation.JobDemote:
		if name == w.leader {
			w.t.Fatalf("demoted the leader %s", name)
		}
		s.voter = false
	case operation.JobStepDown:
		// hashicorp/raft hands leadership to the most up-to-date voter; all are
		// equal here, so the first voter in the configuration other than the leader.
		for _, o := range w.all() {
			if o.inRaft && o.voter && o.name != w.leader {
				w.leader = o.name
				w.elections++
				w.leaders = append(w.leaders, o.name)
				return
			}
		}
		w.t.Fatalf("step-down with no other voter")
	case operation.JobRemovePeer:
		if name == w.leader {
			w.t.Fatalf("removed the leader %s", name)
		}
		s.inRaft, s.voter = false, false
	case operation.JobValidate:
	}
}

// pass runs one reconcile; lose drops the status write (a crash after the action,
// before the write).
func (w *world) pass(lose bool) Decision {
	in := w.input()
	d := Decide(in)
	if d.Disruptive() && d.Status != nil && w.status != nil && !statusEqualButMessages(d.Status, w.status) {
		w.t.Fatalf("a pass both changed the intent and acted (%s %s%s): status %+v -> %+v", d.Kind, d.Object, d.Job, w.status, d.Status)
	}
	w.act(d)
	switch d.Kind {
	case operation.KindComplete:
		w.completed = true
	case operation.KindRolledBack:
		w.rolledBack = true
	case operation.KindBreakGlass:
		a := d.Action
		w.breakGlass = &a
	}
	if !lose {
		if d.Kind == operation.KindFail {
			w.up.Failure = &baov1.UpgradeFailure{Reason: d.Reason, Message: d.Message, Pod: d.Member}
		}
		w.status = d.Status
		if d.Serving != "" {
			w.serving = d.Serving
		}
	}
	// Invariant 6: no green vote before promotion was released (but the one autopilot
	// handed out, until it is taken back).
	for _, s := range w.green {
		early := s.name == w.earlyVoter && w.status != nil &&
			(w.status.Phase == baov1.BlueGreenDeployGreen || w.status.Phase == baov1.BlueGreenSync)
		if s.voter && !early && (w.status == nil || !IsRollback(w.status.Phase) && slices.Index(Phases(), w.status.Phase) < slices.Index(Phases(), baov1.BlueGreenPromoteGreen)) {
			w.t.Fatalf("green member %s votes in phase %v", s.name, w.status)
		}
	}
	if d.Kind != operation.KindFail {
		w.trace = append(w.trace, traceOf(d))
	}
	w.now = w.now.Add(time.Second)
	return d
}

func statusEqualButMessages(a, b *baov1.BlueGreenStatus) bool {
	return a.Phase == b.Phase && a.JobFailures == b.JobFailures && a.Promotion == b.Promotion &&
		((a.CurrentStep == nil) == (b.CurrentStep == nil)) && (a.CurrentStep == nil || jobKey(a.CurrentStep) == jobKey(b.CurrentStep))
}

func traceOf(d Decision) string {
	switch d.Kind {
	case operation.KindApply, operation.KindDelete:
		return fmt.Sprintf("%s %s", d.Kind, d.Object)
	case operation.KindCreateJob:
		return fmt.Sprintf("Job %s %s", d.Job, d.Member)
	case operation.KindComplete, operation.KindRolledBack, operation.KindBreakGlass:
		return string(d.Kind)
	}
	return ""
}

// run drives the world to completion, dropping the status write of every
// loseEvery-th pass (0: never).
func (w *world) run(loseEvery int) {
	for i := 1; i <= 2000; i++ {
		d := w.pass(loseEvery > 0 && i%loseEvery == 0)
		if w.completed && d.Kind == operation.KindComplete && !(loseEvery > 0 && i%loseEvery == 0) {
			return
		}
		if d.Kind == operation.KindFail {
			w.t.Fatalf("the upgrade failed: %s: %s", d.Reason, d.Message)
		}
	}
	w.t.Fatalf("the upgrade did not complete in 2000 passes; last status %+v", w.status)
}

func (w *world) disruptive() []string {
	var out []string
	for _, s := range w.trace {
		if s != "" && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}

var appsv1StatefulSet = appsv1.StatefulSet{}

// TestGoldenSequences spells out the whole action sequence for 3 and 5 members
// with the leader at every ordinal: green created; every green member promoted;
// every blue follower demoted; one step-down of the blue leader; the client
// Service switched; blue's followers, then the old leader, removed; blue deleted.
func TestGoldenSequences(t *testing.T) {
	for _, replicas := range []int{3, 5} {
		for leader := range replicas {
			t.Run(fmt.Sprintf("%d members, leader bao-%d", replicas, leader), func(t *testing.T) {
				g := NewWithT(t)
				w := newWorld(t, replicas, leader)
				w.run(0)
				want := []string{"Apply GreenStatefulSet"}
				for i := range replicas {
					want = append(want, fmt.Sprintf("Job Promote bao-1a2b3c4d-%d", i))
				}
				for i := range replicas {
					if i != leader {
						want = append(want, fmt.Sprintf("Job Demote bao-%d", i))
					}
				}
				want = append(want, fmt.Sprintf("Job StepDown bao-%d", leader), "Apply ClientService")
				for i := range replicas {
					if i != leader {
						want = append(want, fmt.Sprintf("Job RemovePeer bao-%d", i))
					}
				}
				want = append(want, fmt.Sprintf("Job RemovePeer bao-%d", leader), "Delete BlueStatefulSet", "Delete BlueVolumes", "Complete")
				g.Expect(w.disruptive()).To(Equal(want))
				g.Expect(w.elections).To(Equal(1), "exactly one election")
				g.Expect(w.leader).To(HavePrefix("bao-1a2b3c4d-"), "the new leader is green")
				g.Expect(w.serving).To(Equal("bao-1a2b3c4d"))
				var raft []string
				for _, s := range w.all() {
					if s.inRaft {
						raft = append(raft, s.name)
						g.Expect(s.voter).To(BeTrue(), "%s is in Raft as a non-voter at the end", s.name)
					}
				}
				g.Expect(raft).To(HaveLen(replicas))
				for _, name := range raft {
					g.Expect(name).To(HavePrefix("bao-1a2b3c4d-"), "the Raft configuration holds exactly the green members")
				}
			})
		}
	}
}

// TestGoldenSequenceLiteral is one sequence written out in full, so that a change
// of order is seen by a reader, not only by the generator above.
func TestGoldenSequenceLiteral(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 1)
	w.run(0)
	g.Expect(w.disruptive()).To(Equal([]string{
		"Apply GreenStatefulSet",
		"Job Promote bao-1a2b3c4d-0", "Job Promote bao-1a2b3c4d-1", "Job Promote bao-1a2b3c4d-2",
		"Job Demote bao-0", "Job Demote bao-2",
		"Job StepDown bao-1",
		"Apply ClientService",
		"Job RemovePeer bao-0", "Job RemovePeer bao-2", "Job RemovePeer bao-1",
		"Delete BlueStatefulSet", "Delete BlueVolumes",
		"Complete",
	}))
}

// TestCrashAfterEveryPass drops the status write of every 2nd, 3rd, 5th and 7th
// pass (the operator killed after its action, before its write): the upgrade still
// completes with one election, and no action is repeated that Kubernetes or
// OpenBao would not take as a no-op.
func TestCrashAfterEveryPass(t *testing.T) {
	for _, every := range []int{2, 3, 5, 7} {
		for _, replicas := range []int{3, 5} {
			t.Run(fmt.Sprintf("%d members, every %d", replicas, every), func(t *testing.T) {
				g := NewWithT(t)
				w := newWorld(t, replicas, replicas-1)
				w.run(every)
				g.Expect(w.elections).To(Equal(1))
				g.Expect(w.leader).To(HavePrefix("bao-1a2b3c4d-"))
				g.Expect(w.blueVols).To(BeZero())
			})
		}
	}
}

// TestEarlyVoterIsDemotedBack: a green member that autopilot promoted on its own as it
// joined is demoted back before green is synced; the upgrade then goes on as usual,
// with one election.
func TestEarlyVoterIsDemotedBack(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 0)
	w.earlyVoter = "bao-1a2b3c4d-1"
	w.run(0)
	g.Expect(w.disruptive()[:3]).To(Equal([]string{"Apply GreenStatefulSet", "Job Demote bao-1a2b3c4d-1", "Job Promote bao-1a2b3c4d-0"}))
	g.Expect(w.elections).To(Equal(1))
	g.Expect(w.leader).To(HavePrefix("bao-1a2b3c4d-"))
}

// TestJobFailuresAreRetried: a promote Job that fails twice is tried a third time;
// one that fails maxJobFailures times fails the upgrade naming the member, and a
// retry (more attempts) goes on.
func TestJobFailuresAreRetried(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 0)
	w.failJobs["PromoteMember/bao-1a2b3c4d-1/"] = 2
	w.run(0)
	g.Expect(w.elections).To(Equal(1))
	g.Expect(w.jobs).To(HaveKey("PromoteMember/bao-1a2b3c4d-1/3"))

	w = newWorld(t, 3, 0)
	w.failJobs["DemoteMember/bao-2/"] = 3
	var d Decision
	for range 200 {
		if d = w.pass(false); d.Kind == operation.KindFail {
			break
		}
	}
	g.Expect(d.Kind).To(Equal(operation.KindFail))
	g.Expect(d.Reason).To(Equal(ReasonDemoteFailed))
	g.Expect(d.Member).To(Equal("bao-2"))
	g.Expect(d.Message).To(ContainSubstring("failed 3 times"))
	g.Expect(w.status.JobFailures).To(Equal(int32(3)))
	// A retry grants more attempts and clears the failure.
	operation.GrantAttempts(w.status.CurrentStep)
	w.up.Failure = nil
	w.run(0)
	g.Expect(w.elections).To(Equal(1))
}
