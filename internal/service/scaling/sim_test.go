package scaling

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// world is a small model of a StatefulSet and its Raft cluster: pods come and go
// with replicas, a started pod joins Raft as a non-voter and catches up one tick
// later, executor Jobs take one tick and do what they say, and a pod whose ordinal
// falls off the StatefulSet is gone a tick later, with or without Raft's consent
// (which is what the invariants below catch).
type world struct {
	now      time.Time
	replicas int32
	pods     map[string]bool
	volumes  map[string]string // pod -> "fresh" or "removed" (data of a member removed from Raft)
	raft     map[string]bool   // node -> voter
	joinedAt map[string]int
	tick     int
	leader   string
	jobs     map[string]job
	log      []string
	// violations are broken invariants.
	violations []string
	// preferHighest makes a step-down hand leadership to the highest other voter,
	// the worst successor for a scale-down (Raft picks the most up-to-date voter).
	preferHighest bool
	// elections counts leadership changes.
	elections int
	// uids counts each pod's incarnations: its UID.
	uids map[string]int
}

type job struct {
	action   Action
	pod      string
	doneTick int
	ok       bool
}

func name(i int32) string { return fmt.Sprintf("bao-%d", i) }

func newWorld(n int32, leader int32) *world {
	w := &world{now: t0, replicas: n, pods: map[string]bool{}, volumes: map[string]string{}, raft: map[string]bool{},
		joinedAt: map[string]int{}, jobs: map[string]job{}, leader: name(leader), uids: map[string]int{}}
	for i := range n {
		w.pods[name(i)], w.volumes[name(i)], w.raft[name(i)] = true, "fresh", true
	}
	return w
}

func (w *world) observe(target int32) *operation.Cluster {
	c := &operation.Cluster{Now: w.now, Leader: w.leader, AutopilotKnown: true, AutopilotHealthy: true, LeaderIndex: 100}
	for i := range max(target, w.replicas) {
		n := name(i)
		m := operation.Member{Name: n, Ordinal: int(i), PodExists: w.pods[n], PodReady: w.pods[n], Initialized: w.pods[n],
			UID: fmt.Sprintf("%s-%d", n, w.uids[n])}
		if voter, in := w.raft[n]; in {
			m.InRaft, m.Voter, m.Healthy, m.LastIndex = true, voter, w.pods[n], 100
			m.StableSince = w.now.Add(-time.Duration(w.tick-w.joinedAt[n]) * 20 * time.Second)
			if _, joined := w.joinedAt[n]; !joined {
				m.StableSince = t0.Add(-time.Hour)
			}
			if !voter && w.tick-w.joinedAt[n] < 1 {
				m.LastIndex = 0 // still catching up
			}
		}
		c.Members = append(c.Members, m)
	}
	for n, voter := range w.raft {
		if c.Member(n) == nil {
			c.Extra = append(c.Extra, operation.Member{Name: n, InRaft: true, Voter: voter, Healthy: w.pods[n]})
		}
	}
	slices.SortFunc(c.Extra, func(a, b operation.Member) int { return strings.Compare(a.Name, b.Name) })
	return c
}

// majorityHolds checks invariant 1 over the Raft configuration now.
func (w *world) majorityHolds(what string) {
	voters, healthy := 0, 0
	for n, v := range w.raft {
		if v {
			voters++
			if w.pods[n] {
				healthy++
			}
		}
	}
	if healthy < voters/2+1 {
		w.violations = append(w.violations, fmt.Sprintf("tick %d, %s: %d healthy of %d voters", w.tick, what, healthy, voters))
	}
}

func (w *world) perform(d Decision, s *baov1.ScalingStatus) {
	switch d.Action {
	case ActionSetReplicas:
		w.log = append(w.log, fmt.Sprintf("replicas %d", d.Replicas))
		w.replicas = d.Replicas
	case ActionDeleteVolume:
		w.log = append(w.log, "delete volume "+d.Pod)
		delete(w.volumes, d.Pod)
	case ActionDeletePod:
		w.log = append(w.log, "delete pod "+d.Pod)
		if _, in := w.raft[d.Pod]; in {
			w.violations = append(w.violations, fmt.Sprintf("tick %d: deleted the pod of %s, which is in Raft", w.tick, d.Pod))
		}
		delete(w.pods, d.Pod)
		w.uids[d.Pod]++
	case ActionStepDown, ActionPromote, ActionRemovePeer, ActionDemote:
		key := fmt.Sprintf("%s-%s-%d", d.Action, d.Pod, s.CurrentStep.Attempts)
		if _, ok := w.jobs[key]; !ok {
			w.log = append(w.log, fmt.Sprintf("%s %s", d.Action, d.Pod))
			w.jobs[key] = job{action: d.Action, pod: d.Pod, doneTick: w.tick + 1, ok: true}
		}
	}
}

// step advances the world by one tick: Jobs finish, pods follow replicas.
func (w *world) step() {
	w.tick++
	w.now = w.now.Add(20 * time.Second)
	for k, j := range w.jobs {
		if j.doneTick != w.tick {
			continue
		}
		switch j.action {
		case ActionStepDown:
			// Raft hands leadership to the first voter of the configuration (ties of
			// an idle cluster), which for a StatefulSet is the lowest ordinal.
			var names []string
			for n := range w.raft {
				names = append(names, n)
			}
			slices.Sort(names)
			if w.preferHighest {
				slices.Reverse(names)
			}
			for _, n := range names {
				if w.raft[n] && n != j.pod && w.pods[n] {
					w.leader = n
					w.elections++
					break
				}
			}
		case ActionPromote:
			if _, in := w.raft[j.pod]; in {
				w.raft[j.pod] = true
				w.majorityHolds("promote " + j.pod)
			}
		case ActionDemote:
			if j.pod == w.leader {
				w.violations = append(w.violations, "demoted the leader "+j.pod)
			}
			if _, in := w.raft[j.pod]; in {
				w.raft[j.pod] = false
				w.majorityHolds("demote " + j.pod)
			}
		case ActionRemovePeer:
			if j.pod == w.leader {
				w.violations = append(w.violations, "removed the leader "+j.pod)
			}
			delete(w.raft, j.pod)
			w.majorityHolds("remove " + j.pod)
		}
		w.jobs[k] = j
	}
	for n := range w.pods {
		if ordinalOf(n) >= w.replicas {
			if _, in := w.raft[n]; in {
				w.violations = append(w.violations, fmt.Sprintf("tick %d: pod %s went while still in Raft", w.tick, n))
			}
			delete(w.pods, n)
			w.volumes[n] = "removed"
		}
	}
	for i := range w.replicas {
		n := name(i)
		if !w.pods[n] {
			if w.volumes[n] == "removed" {
				w.violations = append(w.violations, fmt.Sprintf("tick %d: %s started on the volume of a member removed from Raft", w.tick, n))
			}
			w.pods[n], w.volumes[n] = true, "fresh"
			if _, in := w.raft[n]; !in {
				w.raft[n], w.joinedAt[n] = false, w.tick // joins as a non-voter
			}
		}
	}
	w.majorityHolds("tick")
}

func (w *world) jobOf(s *baov1.ScalingStatus) operation.Job {
	st := s.CurrentStep
	if st == nil || st.Attempts == 0 {
		return operation.Job{}
	}
	j, ok := w.jobs[fmt.Sprintf("%s-%s-%d", JobStep(st.Action), st.Pod, st.Attempts)]
	switch {
	case !ok:
		return operation.Job{}
	case w.tick < j.doneTick:
		return operation.Job{Phase: operation.JobRunning}
	default:
		return operation.Job{Phase: operation.JobSucceeded, FinishedAt: w.now.Add(-time.Minute)}
	}
}

// run drives one scaling to target; with crashEvery > 0 the operator loses the
// action of every crashEvery-th pass (it crashed after writing status and before
// acting), and must re-derive it from what it observes.
func run(t *testing.T, w *world, target int32, crashEvery int) []string {
	t.Helper()
	s := Start("op", w.replicas, target, w.now)
	for pass := 1; pass < 400; pass++ {
		c := w.observe(target)
		in := Input{Scaling: s, Cluster: c, Target: target, Replicas: w.replicas, ReplicasCurrent: true, MaxLag: 10,
			StepTimeout: time.Hour, Job: w.jobOf(s), Names: name}
		if s.CurrentStep != nil {
			in.VolumeExists = w.volumes[s.CurrentStep.Pod] != ""
		}
		d := Decide(in)
		if d.Action == ActionFail {
			t.Fatalf("scaling failed: %s", d.Message)
		}
		if d.Action == ActionComplete {
			return w.log
		}
		Record(s, d, c)
		s = s.DeepCopy()
		if crashEvery > 0 && pass%crashEvery == 0 {
			w.step()
			continue
		}
		w.perform(d, s)
		if d.Action == ActionWait || d.Action == ActionSetReplicas || d.Action == ActionStepDown ||
			d.Action == ActionPromote || d.Action == ActionRemovePeer || d.Action == ActionDeleteVolume || d.Action == ActionDemote ||
			d.Action == ActionDeletePod {
			w.step()
		}
	}
	t.Fatalf("scaling to %d did not complete; log %v", target, w.log)
	return nil
}

func TestScalingSequences(t *testing.T) {
	cases := []struct {
		name           string
		from, leader   int32
		to             int32
		prepare        func(*world)
		want           []string
		wantLeaderMove bool
	}{
		{name: "3 to 5", from: 3, leader: 0, to: 5,
			want: []string{"replicas 4", "Promote bao-3", "replicas 5", "Promote bao-4"}},
		{name: "5 to 3, leader kept", from: 5, leader: 0, to: 3,
			want: []string{"RemovePeer bao-4", "replicas 4", "RemovePeer bao-3", "replicas 3"}},
		{name: "3 to 1 with the leader on the highest ordinal", from: 3, leader: 2, to: 1,
			want:           []string{"Demote bao-1", "StepDown bao-2", "RemovePeer bao-2", "replicas 2", "RemovePeer bao-1", "replicas 1"},
			wantLeaderMove: true},
		{name: "5 to 3 with the leader on the highest ordinal: the step-down cannot land on bao-3", from: 5, leader: 4, to: 3,
			prepare:        func(w *world) { w.preferHighest = true },
			want:           []string{"Demote bao-3", "StepDown bao-4", "RemovePeer bao-4", "replicas 4", "RemovePeer bao-3", "replicas 3"},
			wantLeaderMove: true},
		{name: "5 scaled to 3 by hand earlier: two dead voters", from: 3, leader: 0, to: 3,
			prepare: func(w *world) { w.raft["bao-3"], w.raft["bao-4"] = true, true },
			want:    []string{"RemovePeer bao-3", "RemovePeer bao-4"}},
		{name: "3 to 5 onto volumes of removed members", from: 3, leader: 0, to: 5,
			prepare: func(w *world) { w.volumes["bao-3"], w.volumes["bao-4"] = "removed", "removed" },
			want:    []string{"delete volume bao-3", "replicas 4", "Promote bao-3", "delete volume bao-4", "replicas 5", "Promote bao-4"}},
		{name: "StatefulSet scaled down by hand: the voters come back with their data", from: 3, leader: 0, to: 3,
			prepare: func(w *world) {
				w.replicas = 2
				delete(w.pods, "bao-2")
			},
			want: []string{"replicas 3"}},
		{name: "a member left a non-voter", from: 3, leader: 0, to: 3,
			prepare: func(w *world) { w.raft["bao-2"] = false },
			want:    []string{"Promote bao-2"}},
	}
	for _, tc := range cases {
		for _, crashEvery := range []int{0, 2, 3, 5} {
			t.Run(fmt.Sprintf("%s/crash every %d", tc.name, crashEvery), func(t *testing.T) {
				w := newWorld(tc.from, tc.leader)
				if tc.prepare != nil {
					tc.prepare(w)
				}
				startLeader := w.leader
				got := run(t, w, tc.to, crashEvery)
				if len(w.violations) > 0 {
					t.Fatalf("invariants broken: %v", w.violations)
				}
				if crashEvery == 0 && !slices.Equal(got, tc.want) {
					t.Fatalf("actions\n got %v\nwant %v", got, tc.want)
				}
				if crashEvery > 0 && !slices.Equal(dedupe(got), tc.want) {
					t.Fatalf("after crashes the same actions, at most repeated: got %v, want %v", got, tc.want)
				}
				if moved := w.leader != startLeader; moved != tc.wantLeaderMove {
					t.Fatalf("leader moved %t (from %s to %s), want %t", moved, startLeader, w.leader, tc.wantLeaderMove)
				}
				if tc.wantLeaderMove && w.elections != 1 {
					t.Fatalf("%d elections, want exactly 1: a scale-down of the leader's ordinal costs one", w.elections)
				}
				var voters []string
				for n, v := range w.raft {
					if !v {
						t.Fatalf("%s is left a non-voter", n)
					}
					voters = append(voters, n)
				}
				slices.Sort(voters)
				want := make([]string, 0, tc.to)
				for i := range tc.to {
					want = append(want, name(i))
				}
				if !slices.Equal(voters, want) {
					t.Fatalf("final Raft configuration %v, want exactly %v", voters, want)
				}
			})
		}
	}
}

// dedupe drops consecutive repeats: an action lost to a crash is taken again.
func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// A member removed from Raft by hand while its pod serves (issue 39) is brought back
// as a voter: its stale data deleted, never while it is in Raft, never started again
// on that data, with no election and the majority kept throughout, whatever pass the
// operator loses.
func TestRejoinSequences(t *testing.T) {
	for _, out := range []string{"bao-1", "bao-2"} {
		for _, crash := range []int{0, 2, 3} {
			t.Run(fmt.Sprintf("%s out, crash every %d", out, crash), func(t *testing.T) {
				w := newWorld(3, 0)
				delete(w.raft, out)
				w.volumes[out] = "removed"
				log := run(t, w, 3, crash)
				if len(w.violations) > 0 {
					t.Fatalf("invariants broken: %v; log %v", w.violations, log)
				}
				if !w.raft[out] {
					t.Fatalf("%s is not a voter at the end: %v; log %v", out, w.raft, log)
				}
				if w.elections != 0 {
					t.Fatalf("%d elections; log %v", w.elections, log)
				}
				want := []string{"delete volume " + out, "delete pod " + out, "Promote " + out}
				for i, l := range want {
					if !slices.Contains(log, l) {
						t.Fatalf("log %v lacks %q", log, l)
					}
					if i > 0 && slices.Index(log, l) < slices.Index(log, want[i-1]) {
						t.Fatalf("log %v: %q before %q", log, l, want[i-1])
					}
				}
			})
		}
	}
}
