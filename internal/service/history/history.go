// Package history keeps status.history: one entry per operation that ended
// (upgrade, rollout, scaling), written in the same status write that ends it, so
// an operator that dies before that write decides the same end again and writes
// the entry then (never twice, never lost). While an operation runs, its stats
// tally the Raft terms seen and its longest step. Pure, and a leaf: the operations
// call End when they end one, the reconciler calls Observe and Track once per pass.
package history

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// StepOfflineWindow is the longest step of an offline upgrade: from the stop of
// every member to the first leader on the target.
const StepOfflineWindow = "OfflineWindow"

// Observe records the Raft term seen by this pass (0: not read) in the stats of the
// operations that run in st. Called before the pass decides, so that an operation
// that ends in this pass counts it.
func Observe(st *baov1.OpenBaoClusterStatus, term uint64) {
	if term == 0 {
		return
	}
	if up := st.Upgrade; up != nil {
		up.Stats = observeTerm(up.Stats, term)
	}
	if sc := st.Scaling; sc != nil {
		sc.Stats = observeTerm(sc.Stats, term)
	}
}

func observeTerm(s *baov1.OperationStats, term uint64) *baov1.OperationStats {
	if s == nil {
		s = &baov1.OperationStats{}
	}
	t := int64(term)
	if s.FirstTerm == 0 || t < s.FirstTerm {
		s.FirstTerm = t
	}
	if t > s.LastTerm {
		s.LastTerm = t
	}
	return s
}

// Track compares the status a pass read (before) with the one it leaves (after):
// a step that ended counts toward the longest step, and an operation that failed
// in this pass leaves a Failed entry. Then the history is cut to limit entries.
// Pure; calling it again on the same two statuses changes nothing more.
func Track(before, after *baov1.OpenBaoClusterStatus, limit int, now time.Time) {
	if b, a := before.Upgrade, after.Upgrade; b != nil && a != nil && b.ID == a.ID {
		a.Stats = countStep(a.Stats, stepOf(b, before.BlueGreen), stepOf(a, after.BlueGreen), now)
		if bo, ao := b.Offline, a.Offline; ao != nil && ao.ServingAt != nil && (bo == nil || bo.ServingAt == nil) && ao.StoppedAt != nil {
			a.Stats = longest(a.Stats, &baov1.StepRecord{Action: StepOfflineWindow, Seconds: seconds(ao.ServingAt.Sub(ao.StoppedAt.Time))})
		}
		if b.Failure == nil && a.Failure != nil {
			Add(after, Upgrade(a, after.BlueGreen, baov1.OutcomeFailed, string(a.Failure.Reason), a.Failure.Message, now), 0)
		}
	}
	if b, a := before.Scaling, after.Scaling; b != nil && a != nil && b.ID == a.ID {
		a.Stats = countStep(a.Stats, b.CurrentStep, a.CurrentStep, now)
		if b.Failure == nil && a.Failure != nil {
			Add(after, Scaling(a, baov1.OutcomeFailed, string(a.Failure.Reason), a.Failure.Message, now), 0)
		}
	}
	if limit > 0 && len(after.History) > limit {
		after.History = after.History[:limit]
	}
}

// stepOf is the step in progress of an upgrade: blue-green's own, or the upgrade's.
func stepOf(up *baov1.UpgradeStatus, bg *baov1.BlueGreenStatus) *baov1.UpgradeStep {
	if bg != nil && bg.CurrentStep != nil {
		return bg.CurrentStep
	}
	return up.CurrentStep
}

// countStep counts the step b when it is no longer the one in progress (a).
func countStep(s *baov1.OperationStats, b, a *baov1.UpgradeStep, now time.Time) *baov1.OperationStats {
	if b == nil || b.StartedAt == nil || sameStep(b, a) {
		return s
	}
	return longest(s, &baov1.StepRecord{Action: string(b.Action), Member: b.Pod, Seconds: seconds(now.Sub(b.StartedAt.Time))})
}

// sameStep: a step is the same while it acts on the same member from the same
// start (a step-down followed by the replacement of the same member is one step).
func sameStep(b, a *baov1.UpgradeStep) bool {
	return a != nil && a.Pod == b.Pod && a.StartedAt != nil && a.StartedAt.Equal(b.StartedAt)
}

func longest(s *baov1.OperationStats, r *baov1.StepRecord) *baov1.OperationStats {
	if s == nil {
		s = &baov1.OperationStats{}
	}
	if s.LongestStep == nil || r.Seconds > s.LongestStep.Seconds {
		s.LongestStep = r
	}
	return s
}

func seconds(d time.Duration) int64 { return int64(d.Round(time.Second) / time.Second) }

// Add puts e first in st's history (newest first); limit > 0 cuts it to limit
// entries. An entry for the same operation and outcome at the same time is not
// added twice.
func Add(st *baov1.OpenBaoClusterStatus, e baov1.HistoryEntry, limit int) {
	if len(st.History) > 0 {
		h := st.History[0]
		if h.ID == e.ID && h.Kind == e.Kind && h.Outcome == e.Outcome && h.EndedAt.Equal(e.EndedAt) {
			return
		}
	}
	st.History = append([]baov1.HistoryEntry{e}, st.History...)
	if limit > 0 && len(st.History) > limit {
		st.History = st.History[:limit]
	}
}

// End adds the entry of the upgrade or rollout in st, which ends now with outcome,
// before the caller clears it. The step in progress, if any, counts as ended now.
func End(st *baov1.OpenBaoClusterStatus, outcome baov1.Outcome, reason, message string, now time.Time) {
	if st.Upgrade == nil {
		return
	}
	Add(st, Upgrade(st.Upgrade, st.BlueGreen, outcome, reason, message, now), 0)
}

// EndScaling adds the entry of the scaling in st, which ends now with outcome.
func EndScaling(st *baov1.OpenBaoClusterStatus, outcome baov1.Outcome, reason, message string, now time.Time) {
	if st.Scaling == nil {
		return
	}
	Add(st, Scaling(st.Scaling, outcome, reason, message, now), 0)
}

// Upgrade is the history entry of up (with bg, its blue-green status), ending now.
func Upgrade(up *baov1.UpgradeStatus, bg *baov1.BlueGreenStatus, outcome baov1.Outcome, reason, message string, now time.Time) baov1.HistoryEntry {
	kind := baov1.HistoryKind(up.Kind)
	if kind == "" {
		kind = baov1.HistoryVersion
	}
	stats := withStepInProgress(up.Stats, stepOf(up, bg), now)
	t := metav1.NewTime(now)
	e := baov1.HistoryEntry{
		Kind: kind, Outcome: outcome, ID: up.ID, Strategy: up.Strategy, FromVersion: up.FromVersion, TargetVersion: up.TargetVersion,
		Changes: up.Changes, StartedAt: up.StartedAt, EndedAt: &t, Reason: reason, Message: clip(message),
	}
	if kind == baov1.HistoryRollout {
		e.Strategy = baov1.RollingUpdateStrategy
	}
	if up.Snapshot != nil {
		e.Snapshot = up.Snapshot.DeepCopy()
	}
	fill(&e, stats)
	return e
}

// Scaling is the history entry of sc, ending now.
func Scaling(sc *baov1.ScalingStatus, outcome baov1.Outcome, reason, message string, now time.Time) baov1.HistoryEntry {
	t := metav1.NewTime(now)
	e := baov1.HistoryEntry{
		Kind: baov1.HistoryScaling, Outcome: outcome, ID: sc.ID, FromReplicas: sc.FromReplicas, TargetReplicas: sc.TargetReplicas,
		StartedAt: sc.StartedAt, EndedAt: &t, Reason: reason, Message: clip(message),
	}
	fill(&e, withStepInProgress(sc.Stats, sc.CurrentStep, now))
	return e
}

// QuorumRecovery is the history entry of a recovery from a lost majority, ending
// now with outcome.
func QuorumRecovery(r *baov1.QuorumRecoveryStatus, outcome baov1.Outcome, reason, message string, now time.Time) baov1.HistoryEntry {
	t := metav1.NewTime(now)
	return baov1.HistoryEntry{Kind: baov1.HistoryQuorumRecovery, Outcome: outcome, ID: r.ID, StartedAt: r.StartedAt, EndedAt: &t,
		Reason: reason, Message: clip(message)}
}

func withStepInProgress(s *baov1.OperationStats, step *baov1.UpgradeStep, now time.Time) *baov1.OperationStats {
	if s != nil {
		s = s.DeepCopy()
	}
	return countStep(s, step, nil, now)
}

func fill(e *baov1.HistoryEntry, s *baov1.OperationStats) {
	if s == nil {
		return
	}
	if s.LastTerm > s.FirstTerm && s.FirstTerm > 0 {
		e.Elections = int32(s.LastTerm - s.FirstTerm)
	}
	if s.LongestStep != nil {
		e.LongestStep = s.LongestStep.DeepCopy()
	}
}

// clip keeps a message within the API's 1024 characters (bytes), on a rune
// boundary.
func clip(s string) string {
	const max = 1024
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max-3], "") + "..."
}

// Duration is how long e took, rounded to the second; 0 when unknown.
func Duration(e baov1.HistoryEntry) time.Duration {
	if e.StartedAt == nil || e.EndedAt == nil {
		return 0
	}
	return e.EndedAt.Sub(e.StartedAt.Time).Round(time.Second)
}

// Summary says e in one line, for events and kubectl bao history.
func Summary(e baov1.HistoryEntry) string {
	what := fmt.Sprintf("%s %s → %s", e.Kind, e.FromVersion, e.TargetVersion)
	switch e.Kind {
	case baov1.HistoryRollout:
		what = fmt.Sprintf("Rollout on %s (%s)", e.TargetVersion, e.Changes)
	case baov1.HistoryScaling:
		what = fmt.Sprintf("Scaling %d → %d members", e.FromReplicas, e.TargetReplicas)
	}
	return fmt.Sprintf("%s: %s", what, e.Outcome)
}
