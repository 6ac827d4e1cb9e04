package rolling

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	oldImage   = "ghcr.io/openbao/openbao:2.4.0"
	newImage   = "ghcr.io/openbao/openbao:2.4.1"
	newVersion = "2.4.1"
)

type simMember struct {
	ordinal                          int
	image, version                   string
	exists, ready, voter, healthy    bool
	goneTicks, readyTicks, voteTicks int
}

// world simulates a cluster that reacts to the actions a reconciler would perform,
// with realistic delays: a deleted pod is gone for a tick, comes back on the template
// image, becomes Ready two ticks later and a healthy voter one tick after that; a
// step-down Job succeeds after a tick and moves leadership to an upgraded member.
type world struct {
	t             *testing.T
	now           time.Time
	members       map[string]*simMember
	names         []string
	leader        string
	template      string
	job           operation.Job
	leaderChanges int
	log           []string
	// handoff is the upgrade's leaderHandoff; with Shutdown, deleting the leader's
	// pod hands leadership to an upgraded healthy voter, as OpenBao's graceful
	// shutdown does, and is a defect only while a member still runs the old image.
	handoff baov1.LeaderHandoff
}

func newWorld(t *testing.T, n, leader int) *world {
	w := &world{t: t, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), members: map[string]*simMember{}, template: oldImage,
		handoff: baov1.LeaderHandoffStepDown}
	for i := range n {
		name := fmt.Sprintf("bao-%d", i)
		w.names = append(w.names, name)
		w.members[name] = &simMember{ordinal: i, image: oldImage, version: "2.4.0", exists: true, ready: true, voter: true, healthy: true}
	}
	w.leader = fmt.Sprintf("bao-%d", leader)
	return w
}

func (w *world) observe() *operation.Cluster {
	c := &operation.Cluster{Now: w.now, Leader: w.leader, AutopilotKnown: true, LeaderIndex: 1000}
	healthy := true
	for _, name := range w.names {
		m := w.members[name]
		c.Members = append(c.Members, operation.Member{
			Name: name, Ordinal: m.ordinal, PodExists: m.exists, PodReady: m.ready, Image: m.image,
			Initialized: m.exists, Sealed: !m.ready, Version: ifThen(m.ready, m.version),
			InRaft: true, Voter: m.voter, Healthy: m.healthy, LastIndex: 1000,
		})
		healthy = healthy && m.healthy
	}
	c.AutopilotHealthy = healthy
	return c
}

func ifThen(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// tick advances time by a second and lets pods and Jobs progress.
func (w *world) tick() {
	w.now = w.now.Add(time.Second)
	for _, name := range w.names {
		m := w.members[name]
		switch {
		case !m.exists:
			if m.goneTicks--; m.goneTicks <= 0 {
				m.exists, m.image, m.readyTicks = true, w.template, 2
				if m.image == newImage {
					m.version = "2.4.1"
				}
			}
		case !m.ready:
			if m.readyTicks--; m.readyTicks <= 0 {
				m.ready, m.voteTicks = true, 1
			}
		case !m.healthy:
			if m.voteTicks--; m.voteTicks <= 0 {
				m.voter, m.healthy = true, true
			}
		}
	}
	if w.job.Phase == operation.JobRunning {
		w.job = operation.Job{Phase: operation.JobSucceeded, FinishedAt: w.now}
		for _, name := range w.names {
			if name != w.leader && w.members[name].image == newImage && w.members[name].healthy {
				w.leader = name
				w.leaderChanges++
				break
			}
		}
	}
}

func (w *world) perform(d Decision) {
	switch d.Action {
	case ActionUpdateTemplate:
		w.template = newImage
	case ActionStepDown:
		w.job = operation.Job{Phase: operation.JobRunning}
	case ActionDeletePod:
		if d.Pod == w.leader {
			if w.handoff != baov1.LeaderHandoffShutdown {
				w.t.Fatalf("deleted the leader's pod %s", d.Pod)
			}
			w.leader = ""
			for _, name := range w.names {
				if m := w.members[name]; name != d.Pod && (m.image != newImage || !m.healthy) {
					w.t.Fatalf("shut the leader %s down while %s was not an upgraded healthy voter", d.Pod, name)
				}
			}
			for _, name := range w.names {
				if name != d.Pod {
					w.leader = name
					w.leaderChanges++
					break
				}
			}
		}
		down := 0
		for _, m := range w.members {
			if !m.healthy {
				down++
			}
		}
		if down > 0 {
			w.t.Fatalf("deleted %s while another member was down", d.Pod)
		}
		m := w.members[d.Pod]
		m.exists, m.ready, m.voter, m.healthy, m.goneTicks = false, false, false, false, 1
	}
}

// run drives Decide until the upgrade completes, recording every non-wait action.
func run(t *testing.T, w *world, restartEvery int) (*baov1.UpgradeStatus, []string) {
	c := w.observe()
	up := &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", Plan: &baov1.UpgradePlan{Pods: Plan(c)}}
	var seq []string
	for pass := 0; pass < 500; pass++ {
		c = w.observe()
		in := Input{Upgrade: up, Cluster: c, TargetImage: newImage, TargetVersion: "2.4.1", TemplateImage: w.template,
			StepTimeout: 5 * time.Minute, SettleTime: 2 * time.Second, MaxLag: 100, StepDownJob: w.job, LeaderHandoff: w.handoff}
		d := Decide(in)
		if d.Action == ActionFail {
			t.Fatalf("upgrade failed: %s", d.Message)
		}
		if d.Action == ActionComplete {
			seq = append(seq, fmt.Sprintf("%s", d.Action))
			return up, seq
		}
		if d.Action != ActionWait {
			seq = append(seq, strings.TrimSpace(fmt.Sprintf("%s %s", d.Action, d.Pod)))
		}
		Record(up, d, c, newImage, w.handoff)
		if restartEvery > 0 && pass%restartEvery == 0 {
			// The operator restarts: only the persisted status survives; the action of
			// this pass is lost and must be re-derived by the next Decide.
			up = up.DeepCopy()
			w.tick()
			continue
		}
		w.perform(d)
		if d.Action == ActionStepDown {
			// A new attempt starts a new Job.
			w.job = operation.Job{Phase: operation.JobRunning}
		}
		if d.Action == ActionStepDownVerified {
			w.job = operation.Job{}
		}
		w.tick()
	}
	t.Fatal("upgrade did not complete within 500 passes")
	return nil, nil
}

func TestRollingGoldenSequences(t *testing.T) {
	for _, n := range []int{3, 5} {
		for leader := range n {
			t.Run(fmt.Sprintf("%d-members-leader-%d", n, leader), func(t *testing.T) {
				g := NewWithT(t)
				w := newWorld(t, n, leader)
				up, seq := run(t, w, 0)
				g.Expect(w.leaderChanges).To(Equal(1), "exactly one planned leadership change")
				g.Expect(w.members[w.leader].image).To(Equal(newImage), "the new leader runs the target")
				g.Expect(up.CompletedPods).To(HaveLen(n))
				g.Expect(up.CompletedPods[n-1]).To(Equal(fmt.Sprintf("bao-%d", leader)), "the leader is replaced last")
				for _, m := range w.members {
					g.Expect(m.version).To(Equal("2.4.1"))
				}
				golden(t, fmt.Sprintf("rolling-%d-leader-%d.golden", n, leader), strings.Join(seq, "\n")+"\n")
			})
		}
	}
}

// TestRollingShutdownHandoffGoldenSequences: with leaderHandoff Shutdown the leader,
// last, is deleted without a step-down once every other member is upgraded; one
// leadership change, onto the target, and never a step-down Job.
func TestRollingShutdownHandoffGoldenSequences(t *testing.T) {
	for _, n := range []int{3, 5} {
		for _, leader := range []int{0, n / 2, n - 1} {
			t.Run(fmt.Sprintf("%d-members-leader-%d", n, leader), func(t *testing.T) {
				g := NewWithT(t)
				w := newWorld(t, n, leader)
				w.handoff = baov1.LeaderHandoffShutdown
				up, seq := run(t, w, 0)
				g.Expect(w.leaderChanges).To(Equal(1), "exactly one leadership change")
				g.Expect(w.members[w.leader].image).To(Equal(newImage), "the new leader runs the target")
				g.Expect(up.CompletedPods[n-1]).To(Equal(fmt.Sprintf("bao-%d", leader)), "the leader is replaced last")
				g.Expect(strings.Join(seq, "\n")).NotTo(ContainSubstring(string(ActionStepDown)), "no step-down")
				golden(t, fmt.Sprintf("rolling-shutdown-%d-leader-%d.golden", n, leader), strings.Join(seq, "\n")+"\n")
			})
		}
	}
}

// TestRollingSurvivesRestartsBetweenSteps drops the action of every k-th pass, as if
// the operator crashed right after persisting the intent: the upgrade still completes
// with one leader change and never acts twice on the same member.
func TestRollingSurvivesRestartsBetweenSteps(t *testing.T) {
	for _, every := range []int{2, 3, 5, 7} {
		for leader := range 3 {
			t.Run(fmt.Sprintf("restart-every-%d-leader-%d", every, leader), func(t *testing.T) {
				g := NewWithT(t)
				w := newWorld(t, 3, leader)
				// Odd restart periods with the Shutdown hand-off, even ones with StepDown.
				if every%2 == 1 {
					w.handoff = baov1.LeaderHandoffShutdown
				}
				up, _ := run(t, w, every)
				g.Expect(w.leaderChanges).To(Equal(1))
				g.Expect(up.CompletedPods).To(HaveLen(3))
				for _, m := range w.members {
					g.Expect(m.version).To(Equal("2.4.1"))
				}
			})
		}
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file %s (run go test ./internal/service/upgrade/rolling/ -update): %v", path, err)
	}
	if string(want) != got {
		t.Errorf("sequence differs from %s:\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
