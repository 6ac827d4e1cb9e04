package operation

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Recorder receives the upgrade's metrics; internal/metrics.Metrics is one. Every
// upgrade series carries the strategy that runs it.
type Recorder interface {
	// UpgradeState reports whether an upgrade of strategy runs and how many of its
	// steps are done.
	UpgradeState(namespace, name, strategy string, inProgress bool, completed, total int)
	// StepCompleted observes how long one step took: a member of a rolling
	// upgrade from intent to settled, one executor step of a blue-green upgrade.
	StepCompleted(namespace, name, strategy string, d time.Duration)
	// UpgradeCompleted observes a whole upgrade's duration.
	UpgradeCompleted(namespace, name, strategy string, d time.Duration)
	// LeaderTransfer counts a planned leadership change.
	LeaderTransfer(namespace, name string)
	// UpgradeFailed counts a failure by strategy and reason.
	UpgradeFailed(namespace, name, strategy, reason string)
	// UpgradeRolledBack counts an upgrade that was rolled back, by reason (Requested,
	// or the failure that rolled it back on its own).
	UpgradeRolledBack(namespace, name, strategy, reason string)
	// SnapshotTaken observes how long a pre-upgrade snapshot took.
	SnapshotTaken(namespace, name string, d time.Duration)
	// BlueGreenPhase reports the phase of the blue-green upgrade; "" when none runs.
	BlueGreenPhase(namespace, name, phase string)
	// Promotion counts a release of a blue-green hold, by how (Requested, Automatic).
	Promotion(namespace, name, how string)
}

// RecordUpgrade is the upgrade's metrics bookkeeping, for both strategies: it reads
// what one pass changed from the status before the pass and the status the pass
// wrote, and reports it on rec. The caller calls it once per pass, after the status
// write succeeded, so a transition is counted once even when a write fails and the
// pass runs again. idle is the strategy reported while no upgrade runs (the spec's).
//
// What counts, from status alone:
//   - a failure: status.upgrade.failure appears or is replaced (a new "at");
//   - a completion: the upgrade is gone and currentVersion moved to its target (a
//     cancelled upgrade leaves currentVersion alone and is not counted);
//   - a rolling member: a new entry in completedPods, timed from its step's start;
//   - a blue-green step: status.blueGreen.currentStep replaced or cleared without a
//     failure, timed from its start;
//   - a leader transfer: a rolling TransferLeadership step that became ReplaceMember
//     for the same member, or blue-green's leaderMovedAt being set;
//   - a promotion: status.blueGreen.promotion becoming Requested or Automatic;
//   - a rollback: a new status.lastRollback, by RollbackReason;
//   - a snapshot: status.upgrade.snapshot set by a pass whose step was TakeSnapshot
//     (a reused receipt takes no step and is not timed).
func RecordUpgrade(rec Recorder, namespace, name, idle string, before, after *baov1.OpenBaoClusterStatus, now time.Time) {
	b, a := before.Upgrade, after.Upgrade
	strategy := idle
	switch {
	case a != nil:
		strategy = string(a.Strategy)
	case b != nil:
		strategy = string(b.Strategy)
	}
	completed, total := progressOf(a)
	rec.UpgradeState(namespace, name, strategy, a != nil, completed, total)

	if a != nil && a.Failure != nil && (b == nil || b.Failure == nil || !sameTime(b.Failure.At, a.Failure.At)) {
		rec.UpgradeFailed(namespace, name, strategy, string(a.Failure.Reason))
	}
	if b != nil && a == nil && b.TargetVersion != "" && after.CurrentVersion == b.TargetVersion &&
		before.CurrentVersion != after.CurrentVersion && b.StartedAt != nil {
		rec.UpgradeCompleted(namespace, name, strategy, now.Sub(b.StartedAt.Time))
	}
	if lr := after.LastRollback; lr != nil && (before.LastRollback == nil || !sameTime(before.LastRollback.At, lr.At)) {
		rec.UpgradeRolledBack(namespace, name, strategy, RollbackReason(lr.Reason))
	}
	if b != nil && b.Snapshot == nil && a != nil && a.Snapshot != nil {
		if st := b.CurrentStep; st != nil && st.Action == baov1.StepTakeSnapshot && st.StartedAt != nil {
			rec.SnapshotTaken(namespace, name, now.Sub(st.StartedAt.Time))
		}
	}
	if b != nil {
		recordRollingSteps(rec, namespace, name, strategy, b, a, now)
	}
	recordBlueGreen(rec, namespace, name, strategy, before.BlueGreen, after.BlueGreen, a, now)
}

// recordRollingSteps reports the members a rolling pass completed and a verified
// step-down.
func recordRollingSteps(rec Recorder, namespace, name, strategy string, b, a *baov1.UpgradeStatus, now time.Time) {
	st := b.CurrentStep
	if st == nil || st.StartedAt == nil {
		return
	}
	var done []string
	if a != nil {
		done = a.CompletedPods
	}
	if !slices.Contains(b.CompletedPods, st.Pod) && slices.Contains(done, st.Pod) {
		rec.StepCompleted(namespace, name, strategy, now.Sub(st.StartedAt.Time))
		if st.Action == baov1.StepShutdownLeader {
			// The shut-down leader's step ends once a leader on the target was verified.
			rec.LeaderTransfer(namespace, name)
		}
	}
	if a != nil && a.CurrentStep != nil && st.Action == baov1.StepTransferLeadership &&
		a.CurrentStep.Pod == st.Pod && a.CurrentStep.Action == baov1.StepReplaceMember {
		rec.LeaderTransfer(namespace, name)
	}
}

// recordBlueGreen reports the blue-green phase, its finished steps, the leader's
// move and a release of the promotion hold.
func recordBlueGreen(rec Recorder, namespace, name, strategy string, b, a *baov1.BlueGreenStatus, up *baov1.UpgradeStatus, now time.Time) {
	switch {
	case a != nil:
		rec.BlueGreenPhase(namespace, name, string(a.Phase))
	case b != nil:
		rec.BlueGreenPhase(namespace, name, "")
	}
	if b == nil {
		return
	}
	if st := b.CurrentStep; st != nil && st.StartedAt != nil && (up == nil || up.Failure == nil) {
		var next *baov1.UpgradeStep
		if a != nil {
			next = a.CurrentStep
		}
		if next == nil || next.Action != st.Action || next.Pod != st.Pod {
			rec.StepCompleted(namespace, name, strategy, now.Sub(st.StartedAt.Time))
		}
	}
	if a == nil {
		return
	}
	if b.LeaderMovedAt == nil && a.LeaderMovedAt != nil {
		rec.LeaderTransfer(namespace, name)
	}
	if a.Promotion != b.Promotion && (a.Promotion == baov1.PromotionRequested || a.Promotion == baov1.PromotionAutomatic) {
		rec.Promotion(namespace, name, string(a.Promotion))
	}
}

// progressOf is the upgrade's steps done and planned: status.upgrade.progress, or the
// rolling plan's members for a status written before progress existed.
func progressOf(up *baov1.UpgradeStatus) (completed, total int) {
	switch {
	case up == nil:
		return 0, 0
	case up.Progress != nil:
		return int(up.Progress.Completed), int(up.Progress.Total)
	case up.Plan != nil:
		return len(up.CompletedPods), len(up.Plan.Pods)
	}
	return 0, 0
}

func sameTime(a, b *metav1.Time) bool { return a.Equal(b) }

// RollbackRequested begins status.blueGreen.rollbackReason of a rollback a person
// asked for (baokeeper.dev/rollback); an automatic one begins with the failure reason
// and a colon.
const RollbackRequested = "requested with "

// RollbackReason is the reason label of a rollback, from its recorded why: Requested,
// the failure reason that rolled it back on its own, or Automatic when neither can be
// read (a why written by an earlier release).
func RollbackReason(why string) string {
	if strings.HasPrefix(why, RollbackRequested) {
		return "Requested"
	}
	if r, _, ok := strings.Cut(why, ":"); ok && isReasonWord(r) {
		return r
	}
	return "Automatic"
}

// isReasonWord reports whether s looks like a FailureReason: one CamelCase word.
func isReasonWord(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}
