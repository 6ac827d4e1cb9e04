// Package fleet decides what relates one cluster's changes to time and to other
// clusters: maintenance windows (spec.upgrade.windows) and the order of upgrades
// across clusters (spec.upgrade.after). Pure, over one observed snapshot: the
// reconciler reads the other clusters, these functions judge them.
package fleet

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/schedule"
)

// Precheck names.
const (
	// PrecheckWindow passes inside a maintenance window.
	PrecheckWindow = "MaintenanceWindow"
	// PrecheckOrder passes once every cluster of spec.upgrade.after soaked on the
	// target version.
	PrecheckOrder = "UpgradeOrder"
)

// maxWake bounds how long an upgrade that waits for a window or a soak sleeps
// before it looks again (a spec or a clock that changed meanwhile).
const maxWake = 5 * time.Minute

// Windows is where now stands against the cluster's maintenance windows; ok is
// false without windows (or with windows CheckSpec refuses: nothing starts then).
func Windows(c *baov1.OpenBaoCluster, now time.Time) (st schedule.WindowState, ok bool) {
	if len(c.Spec.Upgrade.Windows) == 0 {
		return schedule.WindowState{}, false
	}
	ws, err := schedule.ParseWindows(c.Spec.Upgrade.Windows, now)
	if err != nil {
		return schedule.WindowState{}, false
	}
	return schedule.StateAt(ws, now), true
}

// WindowStatus is status.window: the open window or the next one; nil without
// windows.
func WindowStatus(c *baov1.OpenBaoCluster, now time.Time) *baov1.WindowStatus {
	st, ok := Windows(c, now)
	if !ok {
		return nil
	}
	out := &baov1.WindowStatus{Open: st.Open}
	if !st.OpensAt.IsZero() {
		t := metav1.NewTime(st.OpensAt.UTC())
		out.OpensAt = &t
	}
	if !st.ClosesAt.IsZero() {
		t := metav1.NewTime(st.ClosesAt.UTC())
		out.ClosesAt = &t
	}
	return out
}

// WindowApplies reports whether windows hold an operation of kind k: a version or
// image change, or a rollout, but not a rollout that restarts members on request
// (baokeeper.dev/restart, or the restart of members that did not reload a renewed
// certificate, which is urgent: the old certificate expires).
func WindowApplies(k baov1.OperationKind, restartRequested bool) bool {
	return !(k == baov1.OperationRollout && restartRequested)
}

// WindowPrecheck is the MaintenanceWindow precheck of an operation that has not
// started; ok is false when the cluster has no windows. Outside every window it is
// Pending, says when the next opens, and wake is how long until then.
func WindowPrecheck(c *baov1.OpenBaoCluster, now time.Time) (pc baov1.Precheck, wake time.Duration, ok bool) {
	st, ok := Windows(c, now)
	if !ok {
		return baov1.Precheck{}, 0, false
	}
	pc.Name = PrecheckWindow
	if st.Open {
		pc.Result, pc.Message = baov1.PrecheckPassed, fmt.Sprintf("inside a maintenance window until %s", stamp(st.ClosesAt))
		return pc, 0, true
	}
	pc.Result = baov1.PrecheckPending
	if st.OpensAt.IsZero() {
		pc.Message = "outside every maintenance window, and none opens: check spec.upgrade.windows"
		return pc, maxWake, true
	}
	pc.Message = fmt.Sprintf("outside every maintenance window (spec.upgrade.windows): waits until the next opens at %s (in %s)",
		stamp(st.OpensAt), human(st.OpensAt.Sub(now)))
	return pc, min(st.OpensAt.Sub(now), maxWake), true
}

// WindowHold is why an operation in progress holds at its next safe point because
// its window closed ("" when it goes on): only with windowEnd Pause, outside every
// window. wake is how long until the next window opens.
func WindowHold(c *baov1.OpenBaoCluster, now time.Time) (why string, wake time.Duration) {
	if c.Spec.Upgrade.WindowEnd == baov1.WindowEndFinish {
		return "", 0
	}
	st, ok := Windows(c, now)
	if !ok || st.Open {
		return "", 0
	}
	if st.OpensAt.IsZero() {
		return "the maintenance window closed (spec.upgrade.windowEnd: Pause) and none opens again: check spec.upgrade.windows, or set windowEnd to Finish", maxWake
	}
	return fmt.Sprintf("the maintenance window closed (spec.upgrade.windowEnd: Pause): holding until the next opens at %s (in %s)",
		stamp(st.OpensAt), human(st.OpensAt.Sub(now))), min(st.OpensAt.Sub(now), maxWake)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// human is d rounded for a person: to the minute beyond an hour, else the second.
func human(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// Hold is why the upgrade or rollout up, in progress, holds at its next safe
// point: spec.upgrade.paused, or a maintenance window that closed (windowEnd
// Pause); "" when it goes on. The strategies decide where the safe points are, and
// which steps always finish (a blue-green upgrade past its point of no return, an
// offline upgrade once its members stopped).
func Hold(s *operation.Snapshot, up *baov1.UpgradeStatus) string {
	c := s.Object
	if by := c.PausedBy(); by != "" {
		return "paused by " + by
	}
	if up == nil || !WindowApplies(up.Kind, s.RestartRequested()) {
		return ""
	}
	why, _ := WindowHold(c, s.Now)
	return why
}
