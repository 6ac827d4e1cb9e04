package rolling

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Record writes a decision into the upgrade status, in memory; the caller writes the
// status once, at the end of the pass.
//
// The intent for a member (BeginStep) is a pass of its own that only writes status,
// so every disruptive action happens in a later pass that finds its intent persisted.
// That later pass acts (deletes the pod, creates the step-down Job) and then writes.
// A crash between the two leaves the action done but not recorded; the next pass
// recognises its outcome instead of repeating it: a pod that is gone or on the new
// image is gated, not deleted again (and deletions carry a UID precondition), and a
// step-down Job has a deterministic name, so creating it again is AlreadyExists. The
// envtest restart specs crash the operator after every pass to hold this.
func Record(up *baov1.UpgradeStatus, d Decision, c *operation.Cluster, targetImage string, handoff baov1.LeaderHandoff) {
	now := metav1.NewTime(c.Now)
	switch d.Action {
	case ActionBeginStep:
		action := StepActionFor(c, d.Pod, targetImage, up.TargetVersion, handoff)
		if up.CurrentStep != nil && up.CurrentStep.Pod == d.Pod {
			// The same member again (leadership came back to it): keep its start time
			// so the step timeout still counts from the first attempt, and keep
			// counting attempts (Job names carry them) with a fresh budget.
			up.CurrentStep.Action, up.CurrentStep.GatesPassedAt = action, nil
			operation.GrantAttempts(up.CurrentStep)
		} else {
			up.CurrentStep = &baov1.UpgradeStep{Action: action, Pod: d.Pod, StartedAt: &now}
		}
	case ActionStepDown, ActionPromote:
		up.CurrentStep.Attempts++
	case ActionStepDownVerified:
		up.CurrentStep.Action = StepReplaceMember
	case ActionGatesPassed:
		// Status keeps times to the second: round up, so that the settle time read
		// back from status is never cut short by the lost fraction.
		passed := metav1.NewTime(ceilSecond(c.Now))
		up.CurrentStep.GatesPassedAt = &passed
	case ActionCompleteMember:
		if !slices.Contains(up.CompletedPods, d.Pod) {
			up.CompletedPods = append(up.CompletedPods, d.Pod)
		}
		up.CurrentStep = nil
	case ActionFail:
		up.Failure = &baov1.UpgradeFailure{Reason: d.Reason, Message: d.Message, Pod: d.Pod, At: &now}
	}
	up.WaitingFor = d.WaitingFor
	// A failed upgrade's step keeps what it last waited for: that is what the failure
	// message and a person need, not the "failed, retry" sentence.
	if up.CurrentStep != nil && d.Action != ActionCompleteMember && d.Action != ActionFail && up.Failure == nil {
		up.CurrentStep.WaitingFor = d.WaitingFor
	}
}

// ceilSecond rounds t up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		return tr.Add(time.Second)
	}
	return t
}
