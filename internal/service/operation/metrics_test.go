package operation

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// calls records what RecordUpgrade reported, one line per call, without the
// namespace and name (always ns/bao here).
type calls []string

func (c *calls) add(format string, a ...any) { *c = append(*c, fmt.Sprintf(format, a...)) }
func (c *calls) UpgradeState(_, _, strategy string, inProgress bool, completed, total int) {
	c.add("state %s %t %d/%d", strategy, inProgress, completed, total)
}
func (c *calls) StepCompleted(_, _, strategy string, d time.Duration) {
	c.add("step %s %s", strategy, d)
}
func (c *calls) UpgradeCompleted(_, _, strategy string, d time.Duration) {
	c.add("completed %s %s", strategy, d)
}
func (c *calls) LeaderTransfer(_, _ string) { c.add("transfer") }
func (c *calls) UpgradeFailed(_, _, strategy, reason string) {
	c.add("failed %s %s", strategy, reason)
}
func (c *calls) UpgradeRolledBack(_, _, strategy, reason string) {
	c.add("rolled back %s %s", strategy, reason)
}
func (c *calls) SnapshotTaken(_, _ string, d time.Duration) { c.add("snapshot %s", d) }
func (c *calls) BlueGreenPhase(_, _, phase string)          { c.add("phase %q", phase) }
func (c *calls) Promotion(_, _, how string)                 { c.add("promotion %s", how) }

func TestRecordUpgrade(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(90 * time.Second)
	at := func(d time.Duration) *metav1.Time { m := metav1.NewTime(t0.Add(d)); return &m }
	rolling := func(mut func(*baov1.UpgradeStatus)) *baov1.UpgradeStatus {
		up := &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
			StartedAt: at(0), Progress: &baov1.UpgradeProgress{Completed: 1, Total: 3}}
		if mut != nil {
			mut(up)
		}
		return up
	}
	bg := func(mut func(*baov1.BlueGreenStatus)) *baov1.BlueGreenStatus {
		s := &baov1.BlueGreenStatus{Phase: baov1.BlueGreenPromoteGreen, Promotion: baov1.PromotionWaiting}
		if mut != nil {
			mut(s)
		}
		return s
	}
	blueGreen := func(mut func(*baov1.UpgradeStatus)) *baov1.UpgradeStatus {
		return rolling(func(up *baov1.UpgradeStatus) {
			up.Strategy = baov1.BlueGreenStrategy
			if mut != nil {
				mut(up)
			}
		})
	}
	step := func(action baov1.StepAction, pod string, started time.Duration) *baov1.UpgradeStep {
		return &baov1.UpgradeStep{Action: action, Pod: pod, StartedAt: at(started)}
	}
	failure := func(reason baov1.FailureReason, when time.Duration) *baov1.UpgradeFailure {
		return &baov1.UpgradeFailure{Reason: reason, At: at(when)}
	}

	for _, tc := range []struct {
		name          string
		before, after baov1.OpenBaoClusterStatus
		want          calls
	}{
		{name: "no upgrade: the spec's strategy, idle",
			want: calls{"state RollingUpdate false 0/0"}},
		{name: "a rolling pass that only waits reports its progress and nothing else",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.CurrentStep = step(baov1.StepReplaceMember, "bao-1", 30*time.Second) })},
			after:  baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.CurrentStep = step(baov1.StepReplaceMember, "bao-1", 30*time.Second) })},
			want:   calls{"state RollingUpdate true 1/3"}},
		{name: "a rolling member completed: its step is timed from its start",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.CurrentStep = step(baov1.StepReplaceMember, "bao-1", 60*time.Second) })},
			after: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) {
				up.CompletedPods = []string{"bao-1"}
				up.Progress.Completed = 2
			})},
			want: calls{"state RollingUpdate true 2/3", "step RollingUpdate 30s"}},
		{name: "a verified step-down of the rolling leader is one leader transfer",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) {
				up.CurrentStep = step(baov1.StepTransferLeadership, "bao-2", 60*time.Second)
			})},
			after: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.CurrentStep = step(baov1.StepReplaceMember, "bao-2", 60*time.Second) })},
			want:  calls{"state RollingUpdate true 1/3", "transfer"}},
		{name: "leadership that came back to a member is no transfer",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.CurrentStep = step(baov1.StepReplaceMember, "bao-2", 60*time.Second) })},
			after: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) {
				up.CurrentStep = step(baov1.StepTransferLeadership, "bao-2", 60*time.Second)
			})},
			want: calls{"state RollingUpdate true 1/3"}},
		{name: "a new failure counts once, by reason",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(nil)},
			after:  baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.Failure = failure(baov1.FailureStepTimeout, 80*time.Second) })},
			want:   calls{"state RollingUpdate true 1/3", "failed RollingUpdate StepTimeout"}},
		{name: "a failure already recorded is not counted again",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.Failure = failure(baov1.FailureStepTimeout, 80*time.Second) })},
			after:  baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.Failure = failure(baov1.FailureStepTimeout, 80*time.Second) })},
			want:   calls{"state RollingUpdate true 1/3"}},
		{name: "a failure after a retry is a new one",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.Failure = failure(baov1.FailureStepTimeout, 20*time.Second) })},
			after:  baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.Failure = failure(baov1.FailureStepDownFailed, 80*time.Second) })},
			want:   calls{"state RollingUpdate true 1/3", "failed RollingUpdate StepDownFailed"}},
		{name: "completion: the upgrade is gone and currentVersion is its target",
			before: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: rolling(nil)},
			after:  baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.1"},
			want:   calls{"state RollingUpdate false 0/0", "completed RollingUpdate 1m30s"}},
		{name: "a cancelled upgrade is gone with currentVersion unchanged: no completion",
			before: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: rolling(nil)},
			after:  baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0"},
			want:   calls{"state RollingUpdate false 0/0"}},
		{name: "blue-green: the phase is reported every pass",
			before: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(nil)},
			after:  baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(nil)},
			want:   calls{"state BlueGreen true 1/3", `phase "PromoteGreen"`}},
		{name: "blue-green: a finished executor step is timed",
			before: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) {
				s.CurrentStep = step(baov1.StepPromoteMember, "bao-x-0", 80*time.Second)
			})},
			after: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) {
				s.CurrentStep = step(baov1.StepPromoteMember, "bao-x-1", 90*time.Second)
			})},
			want: calls{"state BlueGreen true 1/3", `phase "PromoteGreen"`, "step BlueGreen 10s"}},
		{name: "blue-green: a step that failed is not a finished step",
			before: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) {
				s.CurrentStep = step(baov1.StepPromoteMember, "bao-x-0", 80*time.Second)
			})},
			after: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(func(up *baov1.UpgradeStatus) { up.Failure = failure(baov1.FailurePromoteFailed, 90*time.Second) }),
				BlueGreen: bg(nil)},
			want: calls{"state BlueGreen true 1/3", "failed BlueGreen PromoteFailed", `phase "PromoteGreen"`}},
		{name: "blue-green: leadership moved to green is one leader transfer",
			before: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) { s.Phase = baov1.BlueGreenTransferLeadership })},
			after: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) {
				s.Phase, s.LeaderMovedAt = baov1.BlueGreenCutover, at(85*time.Second)
			})},
			want: calls{"state BlueGreen true 1/3", `phase "Cutover"`, "transfer"}},
		{name: "blue-green: a released hold counts by how",
			before: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) { s.Phase = baov1.BlueGreenAwaitPromotion })},
			after: baov1.OpenBaoClusterStatus{Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) {
				s.Phase, s.Promotion = baov1.BlueGreenAwaitPromotion, baov1.PromotionRequested
			})},
			want: calls{"state BlueGreen true 1/3", `phase "AwaitPromotion"`, "promotion Requested"}},
		{name: "blue-green: a rollback counts once and clears the phase; currentVersion stays",
			before: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) { s.Phase = baov1.BlueGreenRollbackCleanup })},
			after: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", LastRollback: &baov1.RollbackRecord{TargetVersion: "2.4.1", At: at(90 * time.Second),
				Reason: RollbackRequested + "baokeeper.dev/rollback=r1"}},
			want: calls{"state BlueGreen false 0/0", "rolled back BlueGreen Requested", `phase ""`}},
		{name: "blue-green: an automatic rollback counts by the failure that caused it",
			before: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) { s.Phase = baov1.BlueGreenRollbackCleanup })},
			after: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", LastRollback: &baov1.RollbackRecord{TargetVersion: "2.4.1", At: at(90 * time.Second),
				Reason: "ValidationFailed: the hook failed (spec.upgrade.blueGreen.autoRollback)"}},
			want: calls{"state BlueGreen false 0/0", "rolled back BlueGreen ValidationFailed", `phase ""`}},
		{name: "a snapshot receipt recorded by the snapshot step is timed from the step's start",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) { up.CurrentStep = step(baov1.StepTakeSnapshot, "", 60*time.Second) })},
			after: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) {
				up.Snapshot = &baov1.SnapshotReceipt{Location: "s3://b/k", TakenAt: at(85 * time.Second)}
			})},
			want: calls{"state RollingUpdate true 1/3", "snapshot 30s"}},
		{name: "a reused receipt (no snapshot step) is not timed",
			before: baov1.OpenBaoClusterStatus{Upgrade: rolling(nil)},
			after: baov1.OpenBaoClusterStatus{Upgrade: rolling(func(up *baov1.UpgradeStatus) {
				up.Snapshot = &baov1.SnapshotReceipt{Location: "s3://b/k", TakenAt: at(-time.Hour)}
			})},
			want: calls{"state RollingUpdate true 1/3"}},
		{name: "a rollback already recorded is not counted again",
			before: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", LastRollback: &baov1.RollbackRecord{TargetVersion: "2.4.1", At: at(90 * time.Second)}},
			after:  baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", LastRollback: &baov1.RollbackRecord{TargetVersion: "2.4.1", At: at(90 * time.Second)}},
			want:   calls{"state RollingUpdate false 0/0"}},
		{name: "blue-green: completion clears the phase",
			before: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: blueGreen(nil), BlueGreen: bg(func(s *baov1.BlueGreenStatus) { s.Phase = baov1.BlueGreenCleanup })},
			after:  baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.1"},
			want:   calls{"state BlueGreen false 0/0", "completed BlueGreen 1m30s", `phase ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got calls
			RecordUpgrade(&got, "ns", "bao", string(baov1.RollingUpdateStrategy), &tc.before, &tc.after, now)
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

func TestRollbackReason(t *testing.T) {
	for _, tc := range []struct{ why, want string }{
		{RollbackRequested + "baokeeper.dev/rollback=abc after DemoteFailed: x", "Requested"},
		{"ValidationFailed: hook bao-validate failed (spec.upgrade.blueGreen.autoRollback)", "ValidationFailed"},
		{"PromoteFailed: job failed", "PromoteFailed"},
		{"something an earlier release wrote", "Automatic"},
		{"not a reason: text", "Automatic"},
		{"", "Automatic"},
	} {
		NewWithT(t).Expect(RollbackReason(tc.why)).To(Equal(tc.want), tc.why)
	}
}
