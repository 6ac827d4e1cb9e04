package bluegreen

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// rollbackPoint is where a rollback request arrives: the first pass whose status is
// in phase, after steps of that phase's executor Jobs have finished.
type rollbackPoint struct {
	phase baov1.BlueGreenPhase
	steps int
}

// upTo runs the upgrade until it stands at p, as persisted, with no step in flight.
func (w *world) upTo(p rollbackPoint) {
	w.t.Helper()
	done := 0
	for range 2000 {
		if st := w.status; st != nil && st.Phase == p.phase && st.CurrentStep == nil && done >= p.steps {
			return
		}
		inStep := w.status != nil && w.status.CurrentStep != nil
		d := w.pass(false)
		if d.Kind == operation.KindFail {
			w.t.Fatalf("the upgrade failed before %v: %s", p, d.Message)
		}
		if inStep && w.status.Phase == p.phase && w.status.CurrentStep == nil {
			done++ // a step of this phase is verified done
		}
	}
	w.t.Fatalf("never reached %v", p)
}

// requestRollback does what the reconciler does on a baokeeper.dev/rollback value.
func (w *world) requestRollback() RollbackVerdict {
	v := AcceptsRollback(w.status, w.observe())
	if v.OK {
		StartRollback(w.status, "requested with baokeeper.dev/rollback=1", w.now)
		w.up.Failure = nil
	}
	return v
}

// rollBack drives a started rollback to its end, dropping every loseEvery-th write.
func (w *world) rollBack(loseEvery int) {
	w.t.Helper()
	for i := 1; i <= 2000; i++ {
		lose := loseEvery > 0 && i%loseEvery == 0
		d := w.pass(lose)
		switch d.Kind {
		case operation.KindRolledBack:
			if !lose {
				return
			}
		case operation.KindFail, operation.KindComplete, operation.KindBreakGlass:
			w.t.Fatalf("the rollback ended in %s: %s", d.Kind, d.Message)
		}
	}
	w.t.Fatalf("the rollback did not finish in 2000 passes; last status %+v", w.status)
}

func (w *world) expectBlueRestored(g Gomega, leader string) {
	g.Expect(w.rolledBack).To(BeTrue())
	g.Expect(w.elections).To(BeZero(), "no election: blue's leader kept leading")
	g.Expect(w.leader).To(Equal(leader))
	g.Expect(w.serving).To(Equal("bao"), "blue still serves")
	g.Expect(w.clientSvc).To(Equal("blue"))
	g.Expect(w.greenSts).To(BeFalse(), "green's StatefulSet is gone")
	g.Expect(w.greenVols).To(BeZero(), "green's volumes are gone")
	var raft []string
	for _, s := range w.all() {
		if s.inRaft {
			raft = append(raft, s.name)
			g.Expect(s.voter).To(BeTrue(), "%s is in Raft as a non-voter at the end", s.name)
		}
	}
	var blue []string
	for _, s := range w.blue {
		blue = append(blue, s.name)
	}
	g.Expect(raft).To(Equal(blue), "the Raft configuration holds exactly the blue members")
}

// TestRollbackGoldenSequences: a rollback requested at every point before the point
// of no return, for 3 and 5 members with the leader at each end: blue members that
// were demoted are promoted back first, then green's voters demoted, then green's
// peers removed, then green's StatefulSet and volumes deleted; no election, and the
// Raft configuration is blue's again.
func TestRollbackGoldenSequences(t *testing.T) {
	points := []rollbackPoint{
		{baov1.BlueGreenSync, 0}, {baov1.BlueGreenAwaitPromotion, 0},
		{baov1.BlueGreenPromoteGreen, 1}, {baov1.BlueGreenPromoteGreen, 2},
		{baov1.BlueGreenDemoteBlue, 0}, {baov1.BlueGreenDemoteBlue, 1}, {baov1.BlueGreenDemoteBlue, 2},
		{baov1.BlueGreenTransferLeadership, 0},
	}
	for _, replicas := range []int{3, 5} {
		for _, leader := range []int{0, replicas - 1} {
			for _, p := range points {
				t.Run(fmt.Sprintf("%d members, leader bao-%d, from %s after %d steps", replicas, leader, p.phase, p.steps), func(t *testing.T) {
					g := NewWithT(t)
					w := newWorld(t, replicas, leader)
					w.settings.AutoPromote = p.phase != baov1.BlueGreenAwaitPromotion
					w.upTo(p)
					var want []string
					for _, s := range w.blue {
						if !s.voter {
							want = append(want, "Job Promote "+s.name)
						}
					}
					for _, s := range w.green {
						if s.voter {
							want = append(want, "Job Demote "+s.name)
						}
					}
					for _, s := range w.green {
						want = append(want, "Job RemovePeer "+s.name)
					}
					want = append(want, "Delete GreenStatefulSet", "Delete GreenVolumes", "RolledBack")
					before := len(w.disruptive())
					g.Expect(w.requestRollback().OK).To(BeTrue())
					w.rollBack(0)
					g.Expect(w.disruptive()[before:]).To(Equal(want))
					w.expectBlueRestored(g, fmt.Sprintf("bao-%d", leader))
				})
			}
		}
	}
}

// TestRollbackSequenceLiteral is one rollback written out in full: from DemoteBlue,
// 3 members, after one blue follower was demoted.
func TestRollbackSequenceLiteral(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 1)
	w.upTo(rollbackPoint{baov1.BlueGreenDemoteBlue, 1})
	before := len(w.disruptive())
	g.Expect(w.requestRollback().OK).To(BeTrue())
	w.rollBack(0)
	g.Expect(w.disruptive()[before:]).To(Equal([]string{
		"Job Promote bao-0",
		"Job Demote bao-1a2b3c4d-0", "Job Demote bao-1a2b3c4d-1", "Job Demote bao-1a2b3c4d-2",
		"Job RemovePeer bao-1a2b3c4d-0", "Job RemovePeer bao-1a2b3c4d-1", "Job RemovePeer bao-1a2b3c4d-2",
		"Delete GreenStatefulSet", "Delete GreenVolumes",
		"RolledBack",
	}))
	w.expectBlueRestored(g, "bao-1")
}

// TestRollbackAcrossCrashes drops the status write of every 2nd, 3rd and 5th pass of
// a rollback from DemoteBlue: it still ends with blue restored and no election.
func TestRollbackAcrossCrashes(t *testing.T) {
	for _, every := range []int{2, 3, 5} {
		for _, replicas := range []int{3, 5} {
			t.Run(fmt.Sprintf("%d members, every %d", replicas, every), func(t *testing.T) {
				g := NewWithT(t)
				w := newWorld(t, replicas, replicas-1)
				w.upTo(rollbackPoint{baov1.BlueGreenDemoteBlue, 2})
				g.Expect(w.requestRollback().OK).To(BeTrue())
				w.rollBack(every)
				w.expectBlueRestored(g, fmt.Sprintf("bao-%d", replicas-1))
			})
		}
	}
}

// TestRollbackWaitsForAStepInFlight: a rollback requested while a promotion's Job
// runs waits for it, then demotes the member the Job promoted.
func TestRollbackWaitsForAStepInFlight(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 0)
	w.upTo(rollbackPoint{baov1.BlueGreenPromoteGreen, 1})
	// The next promotion is persisted and its Job runs.
	w.pass(false)
	g.Expect(w.status.CurrentStep).NotTo(BeNil())
	st := w.status.CurrentStep
	w.jobs[jobKey(st)] = upgradeJobRunning()
	g.Expect(w.requestRollback().OK).To(BeTrue())
	d := w.pass(false)
	g.Expect(d.Kind).To(Equal(operation.KindWait))
	g.Expect(d.WaitingFor).To(ContainSubstring("to finish first"))
	// The Job finishes: the member is a voter, and the rollback takes it from there.
	w.find(st.Pod).voter = true
	delete(w.jobs, jobKey(st))
	w.rollBack(0)
	w.expectBlueRestored(g, "bao-0")
	g.Expect(w.disruptive()).To(ContainElement("Job Demote " + st.Pod))
}

func upgradeJobRunning() operation.Job { return operation.Job{Phase: operation.JobRunning} }

func TestAcceptsRollback(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     func(w *world)
		leader     string
		ok, noRet  bool
		whyContain string
	}{
		{name: "no blue-green upgrade", status: func(w *world) { w.status = nil }, whyContain: "nothing to roll back"},
		{name: "waiting for promotion", status: func(w *world) { w.status.Phase = baov1.BlueGreenAwaitPromotion }, ok: true},
		{name: "a failed upgrade before the point of no return", status: func(w *world) { w.status.Phase = baov1.BlueGreenPromoteGreen }, ok: true},
		{name: "a rollback runs already", status: func(w *world) { w.status.Phase = baov1.BlueGreenRollbackDemoteGreen }, whyContain: "runs already"},
		{name: "the step-down is in flight", status: func(w *world) {
			w.status.Phase = baov1.BlueGreenTransferLeadership
			w.status.CurrentStep = &baov1.UpgradeStep{Action: StepStepDown, Pod: "bao-0"}
		}, whyContain: "in flight"},
		{name: "leadership moved to green", status: func(w *world) {
			w.status.Phase = baov1.BlueGreenTransferLeadership
			w.status.LeaderMovedAt = w.status.PhaseStartedAt
		}, noRet: true, whyContain: RestoreRunbook},
		{name: "cleaning up blue", status: func(w *world) { w.status.Phase = baov1.BlueGreenRemoveBlue }, noRet: true, whyContain: "point of no return"},
		{name: "a green member leads (not yet recorded)", status: func(w *world) { w.status.Phase = baov1.BlueGreenTransferLeadership },
			leader: "bao-1a2b3c4d-0", noRet: true, whyContain: "status.lastSnapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, 3, 0)
			w.upTo(rollbackPoint{baov1.BlueGreenSync, 0})
			tc.status(w)
			c := w.observe()
			if tc.leader != "" {
				c.Leader = tc.leader
			}
			v := AcceptsRollback(w.status, c)
			g.Expect(v.OK).To(Equal(tc.ok), v.Why)
			g.Expect(v.PastPointOfNoReturn).To(Equal(tc.noRet))
			if tc.whyContain != "" {
				g.Expect(v.Why).To(ContainSubstring(tc.whyContain))
			}
		})
	}
}

// TestAutoRollback: with autoRollback, a failing validation hook and an executor
// Job that keeps failing roll back instead of failing; without it, they fail.
func TestAutoRollback(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(w *world)
		rollback bool
		reason   baov1.FailureReason
	}{
		{name: "a failed hook with onValidationFailure rolls back", setup: func(w *world) {
			w.settings.HasHook, w.settings.AutoRollbackOnValidation = true, true
			w.failJobs["Validate/"] = 1
		}, rollback: true},
		{name: "a failed hook without it fails", setup: func(w *world) {
			w.settings.HasHook = true
			w.failJobs["Validate/"] = 1
		}, reason: ReasonValidationFailed},
		{name: "a promotion failing maxJobFailures times with onExecutorFailure rolls back", setup: func(w *world) {
			w.settings.AutoRollbackOnExecutor = true
			w.failJobs["PromoteMember/bao-1a2b3c4d-1/"] = 3
		}, rollback: true},
		{name: "a demotion failing with onValidationFailure only fails", setup: func(w *world) {
			w.settings.AutoRollbackOnValidation = true
			w.failJobs["DemoteMember/bao-1/"] = 3
		}, reason: ReasonDemoteFailed},
		{name: "after the point of no return a failing removal fails, with onExecutorFailure", setup: func(w *world) {
			w.settings.AutoRollbackOnExecutor = true
			w.failJobs["RemoveMember/bao-1/"] = 3
		}, reason: ReasonRemovePeerFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, 3, 0)
			tc.setup(w)
			var d Decision
			for range 2000 {
				d = w.pass(false)
				if d.Kind == operation.KindFail || d.Kind == operation.KindRolledBack || d.Kind == operation.KindComplete {
					break
				}
			}
			if tc.rollback {
				g.Expect(d.Kind).To(Equal(operation.KindRolledBack), "%s: %s", d.Kind, d.Message)
				g.Expect(w.status.RollbackReason).To(ContainSubstring("spec.upgrade.blueGreen.autoRollback"))
				w.expectBlueRestored(g, "bao-0")
				return
			}
			g.Expect(d.Kind).To(Equal(operation.KindFail))
			g.Expect(d.Reason).To(Equal(tc.reason))
		})
	}
}

// TestRollbackBreakGlass: a rollback that cannot restore blue stops automation: a
// blue member that cannot be promoted back, a green member that cannot be removed,
// a green leader, a phase that does not finish.
func TestRollbackBreakGlass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     rollbackPoint
		setup  func(w *world)
		reason baov1.BreakGlassReason
		member string
	}{
		{name: "blue cannot be promoted back", at: rollbackPoint{baov1.BlueGreenDemoteBlue, 1},
			setup: func(w *world) { w.failJobs["PromoteMember/bao-1/"] = 3 }, reason: baov1.BreakGlassRollbackFailed, member: "bao-1"},
		{name: "a green peer cannot be removed", at: rollbackPoint{baov1.BlueGreenAwaitPromotion, 0},
			setup: func(w *world) { w.failJobs["RemoveMember/bao-1a2b3c4d-2/"] = 3 }, reason: baov1.BreakGlassRollbackFailed, member: "bao-1a2b3c4d-2"},
		{name: "a green member leads", at: rollbackPoint{baov1.BlueGreenPromoteGreen, 2},
			setup: func(w *world) { w.leader = "bao-1a2b3c4d-0" }, reason: baov1.BreakGlassGreenLeads, member: "bao-1a2b3c4d-0"},
		{name: "no leader for longer than phaseTimeout", at: rollbackPoint{baov1.BlueGreenPromoteGreen, 2},
			setup: func(w *world) { w.leader = ""; w.settings.PhaseTimeout = 5e9 }, reason: baov1.BreakGlassRollbackTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, 3, 0)
			w.settings.AutoPromote = tc.at.phase != baov1.BlueGreenAwaitPromotion
			w.upTo(tc.at)
			g.Expect(w.requestRollback().OK).To(BeTrue())
			tc.setup(w)
			for range 200 {
				if d := w.pass(false); d.Kind == operation.KindBreakGlass || d.Kind == operation.KindRolledBack {
					break
				}
			}
			g.Expect(w.breakGlass).NotTo(BeNil(), "break-glass entered")
			g.Expect(w.breakGlass.BreakGlass).To(Equal(tc.reason))
			g.Expect(w.breakGlass.Member).To(Equal(tc.member))
			g.Expect(w.breakGlass.Message).To(ContainSubstring("requested with baokeeper.dev/rollback=1"))
			g.Expect(w.rolledBack).To(BeFalse())
		})
	}
}

// TestRollbackIsNotHeldByPause: spec.upgrade.paused holds an upgrade between steps,
// never its rollback.
func TestRollbackIsNotHeldByPause(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 0)
	w.upTo(rollbackPoint{baov1.BlueGreenDemoteBlue, 1})
	w.settings.Paused = true
	g.Expect(w.requestRollback().OK).To(BeTrue())
	w.rollBack(0)
	w.expectBlueRestored(g, "bao-0")
	g.Expect(slices.ContainsFunc(w.disruptive(), func(s string) bool { return strings.HasPrefix(s, "Job Demote bao-1a2b3c4d-") })).To(BeTrue())
}
