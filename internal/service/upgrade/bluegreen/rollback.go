package bluegreen

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// RestoreRunbook is the runbook a refused rollback points to.
const RestoreRunbook = upgrade.RestoreRunbook

// RollbackPhases returns the phases of a rollback, in order.
func RollbackPhases() []baov1.BlueGreenPhase {
	return []baov1.BlueGreenPhase{baov1.BlueGreenRollbackPromoteBlue, baov1.BlueGreenRollbackDemoteGreen,
		baov1.BlueGreenRollbackRemoveGreen, baov1.BlueGreenRollbackCleanup}
}

// IsRollback reports whether phase belongs to a rollback.
func IsRollback(phase baov1.BlueGreenPhase) bool {
	return slices.Contains(RollbackPhases(), phase)
}

// PastPointOfNoReturn reports whether green has led: the leader's move to green is
// recorded, a phase from Cutover on runs, or a green member leads now. From then on
// green has written with its version, and blue's older version must not lead again:
// undoing is a restore from the pre-upgrade snapshot, not a rollback.
func PastPointOfNoReturn(st *baov1.BlueGreenStatus, c *operation.Cluster) bool {
	if st == nil {
		return false
	}
	if st.LeaderMovedAt != nil {
		return true
	}
	switch st.Phase {
	case baov1.BlueGreenCutover, baov1.BlueGreenRemoveBlue, baov1.BlueGreenCleanup:
		return true
	}
	return c != nil && c.Leader != "" && memberIn(c.Green, c.Leader) != nil
}

// RollbackVerdict is the answer to a rollback request.
type RollbackVerdict struct {
	// OK means the rollback starts.
	OK bool
	// PastPointOfNoReturn means green has led; Why points to the restore runbook.
	PastPointOfNoReturn bool
	// Why says, when not OK, why nothing is done.
	Why string
}

// AcceptsRollback decides a baokeeper.dev/rollback request against the upgrade as
// it stands and as observed: it starts a rollback of a blue-green upgrade (also a
// failed one) before the point of no return, and only then. A step-down in flight
// is refused too: within seconds green may lead, and a rollback then could not keep
// leadership on blue.
func AcceptsRollback(st *baov1.BlueGreenStatus, c *operation.Cluster) RollbackVerdict {
	switch {
	case st == nil:
		return RollbackVerdict{Why: "no blue-green upgrade runs, so there is nothing to roll back"}
	case IsRollback(st.Phase):
		return RollbackVerdict{Why: fmt.Sprintf("a rollback runs already (%s, because %s)", st.Phase, orNone(st.RollbackReason))}
	case PastPointOfNoReturn(st, c):
		return RollbackVerdict{PastPointOfNoReturn: true, Why: fmt.Sprintf("green (%s) has led, which is the point of no return: "+
			"the upgrade goes on to the end; to go back to %s, restore the pre-upgrade snapshot (status.lastSnapshot) into a new cluster: %s (%s)",
			st.Green.StatefulSet, st.Blue.Version, upgrade.RestoreCommand("CLUSTER", "", st.Blue.Version), RestoreRunbook)}
	case st.Phase == baov1.BlueGreenTransferLeadership && st.CurrentStep != nil && st.CurrentStep.Action == StepStepDown:
		return RollbackVerdict{Why: fmt.Sprintf("the step-down of blue leader %s is in flight and green may lead within seconds: "+
			"set a new baokeeper.dev/rollback value once it settled; if green leads by then, the upgrade goes on to the end", st.CurrentStep.Pod)}
	}
	return RollbackVerdict{OK: true}
}

// StartRollback turns the upgrade into its rollback, in memory: why is recorded in
// status.blueGreen.rollbackReason and the first rollback phase starts. A step in
// flight stays recorded, so that the rollback waits for its Job before acting.
func StartRollback(st *baov1.BlueGreenStatus, why string, now time.Time) {
	st.RollbackReason = why
	st.Phase = baov1.BlueGreenRollbackPromoteBlue
	t := metav1.NewTime(now)
	st.PhaseStartedAt = &t
}

// autoRollback turns a failure before the point of no return into a rollback when
// spec.upgrade.blueGreen.autoRollback asks for it; d otherwise.
func autoRollback(in Input, next *baov1.BlueGreenStatus, d Decision) Decision {
	if d.Kind != operation.KindFail || next == nil || IsRollback(next.Phase) || PastPointOfNoReturn(next, in.Cluster) {
		return d
	}
	switch {
	case d.Reason == ReasonValidationFailed && in.AutoRollbackOnValidation:
	case (d.Reason == ReasonPromoteFailed || d.Reason == ReasonDemoteFailed || d.Reason == ReasonStepDownFailed) && in.AutoRollbackOnExecutor:
	default:
		return d
	}
	why := fmt.Sprintf("%s: %s (spec.upgrade.blueGreen.autoRollback)", d.Reason, d.Message)
	StartRollback(next, why, in.Cluster.Now)
	return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: d.Member, WaitingFor: "rolling back: " + why,
		Event: "Rolling back on its own: " + why}, Status: next}
}

// rollback runs the rollback phases. Any failure here enters break-glass: the
// rollback is what restores consensus on blue, and when it cannot, a person decides.
func rollback(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if next.Phase != baov1.BlueGreenRollbackCleanup {
		if !c.AutopilotKnown || c.Leader == "" {
			return wait("rolling back: waiting for a trustworthy read of autopilot state with a known leader")
		}
		if g := memberIn(c.Green, c.Leader); g != nil {
			return breakGlass(baov1.BreakGlassGreenLeads, g.Name, fmt.Sprintf("green member %s (%s) became the leader during the rollback (%s): "+
				"green has written, and blue's %s must not lead after it; no member is changed until a person decides", g.Name, orNone(g.Version), next.RollbackReason, next.Blue.Version))
		}
		if d, busy := leftoverStep(in, next); busy {
			return d
		}
	}
	switch next.Phase {
	case baov1.BlueGreenRollbackPromoteBlue:
		return rollbackPromoteBlue(in, next)
	case baov1.BlueGreenRollbackDemoteGreen:
		return rollbackDemoteGreen(in, next)
	case baov1.BlueGreenRollbackRemoveGreen:
		return rollbackRemoveGreen(in, next)
	}
	return rollbackCleanup(in, next)
}

// leftoverStep handles a step of the forward path that was recorded when the
// rollback started: its Job finishes first (it may still change Raft), then the step
// is dropped; the rollback works from what it then observes.
func leftoverStep(in Input, next *baov1.BlueGreenStatus) (Decision, bool) {
	st := next.CurrentStep
	if st == nil || ownRollbackStep(in, next) {
		return Decision{}, false
	}
	if st.Action != StepValidate && in.StepJob.Phase == operation.JobRunning {
		return waitOn(st.Pod, fmt.Sprintf("rolling back: waiting for the executor Job of %s %s to finish first", st.Action, st.Pod)), true
	}
	next.CurrentStep = nil
	return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: st.Pod,
		WaitingFor: fmt.Sprintf("rolling back: %s of %s dropped", st.Action, st.Pod)}}, true
}

// ownRollbackStep reports whether the current step is one this rollback phase
// began: promoting a blue member back, demoting or removing a green one.
func ownRollbackStep(in Input, next *baov1.BlueGreenStatus) bool {
	st := next.CurrentStep
	switch next.Phase {
	case baov1.BlueGreenRollbackPromoteBlue:
		return st.Action == StepPromote && memberIn(in.Cluster.Members, st.Pod) != nil
	case baov1.BlueGreenRollbackDemoteGreen:
		return st.Action == StepDemote && memberIn(in.Cluster.Green, st.Pod) != nil
	case baov1.BlueGreenRollbackRemoveGreen:
		return st.Action == StepRemovePeer && memberIn(in.Cluster.Green, st.Pod) != nil
	}
	return false
}

func rollbackPromoteBlue(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if st := next.CurrentStep; st != nil {
		m := c.Member(st.Pod)
		return rollbackJobStep(in, next, operation.JobPromote, m != nil && m.InRaft && m.Voter,
			fmt.Sprintf("blue member %s is a voter again", st.Pod), fmt.Sprintf("rolling back: promoting blue member %s back to voter", st.Pod))
	}
	for _, m := range c.Members {
		if !m.InRaft || m.Voter {
			continue
		}
		healthy := 0
		if m.Healthy {
			healthy = 1
		}
		if w := quorumGate(c, operation.Change{AddVoters: 1, AddHealthy: healthy}); w != "" {
			return waitOn(m.Name, "rolling back: "+w)
		}
		return beginRollback(in, next, StepPromote, m.Name, fmt.Sprintf("rolling back: promoting blue member %s back to voter", m.Name))
	}
	return enter(next, baov1.BlueGreenRollbackDemoteGreen, c.Now, "rolling back: every blue member votes; demoting green's voters", "Rolling back: every blue member votes again")
}

func rollbackDemoteGreen(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if st := next.CurrentStep; st != nil {
		m := c.Member(st.Pod)
		return rollbackJobStep(in, next, operation.JobDemote, m == nil || !m.InRaft || !m.Voter,
			fmt.Sprintf("green member %s is a non-voter", st.Pod), fmt.Sprintf("rolling back: demoting green member %s to non-voter", st.Pod))
	}
	for _, m := range c.Green {
		if !m.InRaft || !m.Voter {
			continue
		}
		if w := quorumGate(c, operation.Change{Remove: m.Name}); w != "" {
			return waitOn(m.Name, "rolling back: "+w)
		}
		return beginRollback(in, next, StepDemote, m.Name, fmt.Sprintf("rolling back: demoting green member %s to non-voter", m.Name))
	}
	return enter(next, baov1.BlueGreenRollbackRemoveGreen, c.Now, "rolling back: no green member votes; removing green's peers from Raft", "Rolling back: no green member votes")
}

func rollbackRemoveGreen(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if st := next.CurrentStep; st != nil {
		m := c.Member(st.Pod)
		return rollbackJobStep(in, next, operation.JobRemovePeer, m == nil || !m.InRaft,
			fmt.Sprintf("green member %s left Raft", st.Pod), fmt.Sprintf("rolling back: removing green member %s from Raft", st.Pod))
	}
	for _, m := range c.Green {
		if !m.InRaft {
			continue
		}
		ch := operation.Change{}
		if m.Voter {
			ch.Remove = m.Name
		}
		if w := quorumGate(c, ch); w != "" {
			return waitOn(m.Name, "rolling back: "+w)
		}
		return beginRollback(in, next, StepRemovePeer, m.Name, fmt.Sprintf("rolling back: removing green member %s from Raft", m.Name))
	}
	return enter(next, baov1.BlueGreenRollbackCleanup, c.Now, "rolling back: green's peers left Raft; deleting green's StatefulSet", "Rolling back: every green peer left Raft")
}

func rollbackCleanup(in Input, next *baov1.BlueGreenStatus) Decision {
	if d, left := deleteSide("rolling back: ", "green", next.Green.StatefulSet, in.GreenExists, in.GreenVolumes,
		operation.ObjectGreenStatefulSet, operation.ObjectGreenVolumes); left {
		return d
	}
	return Decision{Action: operation.Action{Kind: operation.KindRolledBack,
		Event: fmt.Sprintf("Rolled back: every member runs %s on %s, green %s is gone (%s)",
			next.Blue.Version, next.Blue.StatefulSet, next.Green.StatefulSet, next.RollbackReason)}}
}

// beginRollback records a rollback step's intent. spec.upgrade.paused does not
// hold a rollback: it restores the cluster to what it was.
func beginRollback(in Input, next *baov1.BlueGreenStatus, action baov1.StepAction, member, what string) Decision {
	in.Paused = false
	return begin(in, next, action, member, what)
}

// rollbackJobStep is jobStep for a rollback step: when its attempts are spent the
// rollback cannot restore blue's consensus on its own, and automation stops.
func rollbackJobStep(in Input, next *baov1.BlueGreenStatus, kind operation.JobKind, done bool, doneEvent, what string) Decision {
	d := jobStep(in, next, kind, "", done, doneEvent, what)
	if d.Kind == operation.KindFail {
		return breakGlass(baov1.BreakGlassRollbackFailed, d.Member, d.Message+"; the rollback ("+next.RollbackReason+") cannot go on by itself")
	}
	return d
}

func breakGlass(reason baov1.BreakGlassReason, member, msg string) Decision {
	return Decision{Action: operation.Action{Kind: operation.KindBreakGlass, BreakGlass: reason, Member: member, Message: msg, WaitingFor: "break-glass: " + msg}}
}
