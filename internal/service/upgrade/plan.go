package upgrade

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Event reasons of upgrades and rollouts.
const (
	EventPlanned          baov1.Reason = "UpgradePlanned"
	EventBlocked          baov1.Reason = "UpgradeBlocked"
	EventStep             baov1.Reason = "UpgradeStep"
	EventFailed           baov1.Reason = "UpgradeFailed"
	EventCompleted        baov1.Reason = "UpgradeCompleted"
	EventCancelled        baov1.Reason = "UpgradeCancelled"
	EventVersionDeferred  baov1.Reason = "VersionChangeDeferred"
	EventRolloutPlanned   baov1.Reason = "RolloutPlanned"
	EventBlueGreenPhase   baov1.Reason = "BlueGreenPhase"
	EventBlueGreenCleanup baov1.Reason = "BlueGreenCleanup"
	EventRolledBack       baov1.Reason = "RolledBack"
)

// Poll is how often an upgrade in progress looks again while a gate waits on
// OpenBao or on a pod: each pass reads every member's sys/health and autopilot state
// once (members + 1 requests), so one cluster costs at most 2 × (members + 1)
// requests per second while its upgrade waits, and nothing more once it is done.
const Poll = 500 * time.Millisecond

// LockOf is the operation lock of an upgrade in progress: a rollout's own, or its
// strategy's; "" for a strategy this release does not know.
func LockOf(up *baov1.UpgradeStatus) string {
	if up.Kind == baov1.OperationRollout {
		return operation.OperationRollout
	}
	return LockOfStrategy(up.Strategy)
}

// LockOfStrategy is the operation lock of a strategy's upgrade; "" for none known.
func LockOfStrategy(s baov1.UpgradeStrategyType) string {
	switch s {
	case baov1.RollingUpdateStrategy:
		return operation.OperationRollingUpgrade
	case baov1.BlueGreenStrategy:
		return operation.OperationBlueGreenUpgrade
	case baov1.OfflineStrategy:
		return operation.OperationOfflineUpgrade
	}
	return ""
}

// PlanOf turns one step of an upgrade (an Action decided over st, whose upgrade
// status the strategy already recorded) into the pass's Plan: the step's event, and
// for the actions that end or stop the upgrade the status they imply in the same
// write:
//
//   - Fail records the failure (once) and says so in a Warning event;
//   - Complete sets currentVersion and clears the upgrade and its lock in one write
//     (invariant 8); done, when set, clears what else the strategy leaves;
//   - CreateJob says what the Job does once the executor created it.
func PlanOf(st *baov1.OpenBaoClusterStatus, a operation.Action, now time.Time, done func(*baov1.OpenBaoClusterStatus)) operation.Plan {
	up := st.Upgrade
	p := operation.Plan{Action: a, Status: st, Poll: Poll}
	ev := a.Event
	p.Event = ""
	switch a.Kind {
	case operation.KindFail:
		if up.Failure == nil {
			t := metav1.NewTime(now)
			up.Failure = &baov1.UpgradeFailure{Reason: a.Reason, Message: a.Message, Pod: a.Member, At: &t}
		}
		if ev != "" {
			p.Events = append(p.Events, operation.Normal(EventStep, ev))
		}
		p.Events = append(p.Events, operation.Warning(EventFailed, a.Message))
	case operation.KindComplete:
		if ev == "" {
			ev = fmt.Sprintf("Every member runs %s (from %s)", up.TargetVersion, up.FromVersion)
			if up.Kind == baov1.OperationRollout {
				ev = fmt.Sprintf("Every member runs the new pod template (%s)", up.Changes)
			}
		}
		p.Events = append(p.Events, operation.Normal(EventCompleted, ev))
		history.End(st, baov1.OutcomeSucceeded, "", ev, now)
		st.CurrentVersion = up.TargetVersion
		st.Upgrade = nil
		if done != nil {
			done(st)
		}
		operation.Release(st, LockOf(up))
	case operation.KindCreateJob:
		if ev != "" {
			p.Events = append(p.Events, operation.Normal(EventStep, ev))
		}
		p.JobEvent = &operation.Event{Reason: EventStep, Message: Sentence(a.WaitingFor)}
	default:
		if ev != "" {
			p.Events = append(p.Events, operation.Normal(EventStep, ev))
		}
		if a.Kind == operation.KindWait && up.Failure != nil {
			// A person retries; the annotation wakes the upgrade manager.
			p.Kind, p.RequeueAfter = operation.KindNone, 0
		}
	}
	return p
}

// Retry clears a failure and restarts the failed step's clock: the step timeout
// counts from the retry, and the member is gated again from what is observed.
func Retry(up *baov1.UpgradeStatus, now time.Time) {
	up.Failure = nil
	if st := up.CurrentStep; st != nil {
		t := metav1.NewTime(now)
		st.StartedAt, st.GatesPassedAt, st.WaitingFor = &t, nil, ""
		// A step with executor Jobs (step-down, snapshot) gets a fresh budget of
		// attempts; the count goes on, since Job names carry it.
		operation.GrantAttempts(st)
	}
	up.WaitingFor = "retrying"
}
