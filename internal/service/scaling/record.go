package scaling

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Record writes a decision into the scaling status, in memory; the caller writes
// the status once, at the end of the pass. As in the rolling strategy, an intent
// (BeginStep) is a pass of its own, so every disruptive action happens in a later
// pass that finds its intent persisted; each action is idempotent (replicas are
// applied, not incremented; Jobs have deterministic names; a volume is deleted only
// while no pod uses its ordinal), so a crash between an action and its status write
// repeats nothing harmful.
func Record(s *baov1.ScalingStatus, d Decision, c *operation.Cluster) {
	now := metav1.NewTime(c.Now)
	switch d.Action {
	case ActionBeginStep:
		action := StepFor(c, d.Step, d.Pod)
		if s.CurrentStep != nil && s.CurrentStep.Pod == d.Pod {
			// The same member again (leadership came back to it): keep its start time
			// and count attempts on, with a fresh budget.
			s.CurrentStep.Action = action
			operation.GrantAttempts(s.CurrentStep)
		} else {
			s.CurrentStep = &baov1.UpgradeStep{Action: action, Pod: d.Pod, StartedAt: &now}
			if m := c.Member(d.Pod); m != nil && action == StepRejoinMember {
				s.CurrentStep.PodUID = m.UID
			}
		}
	case ActionStepDown, ActionPromote, ActionRemovePeer, ActionDemote:
		s.CurrentStep.Attempts++
	case ActionStepDownVerified:
		s.CurrentStep.Action = StepRemoveMember
		operation.GrantAttempts(s.CurrentStep)
	case ActionCompleteStep:
		done := "added " + d.Pod
		switch s.CurrentStep.Action {
		case StepRemoveMember:
			done = "removed " + d.Pod
		case StepPromoteMember:
			done = "promoted " + d.Pod
		case StepDemoteMember:
			done = "demoted " + d.Pod
		case StepRejoinMember:
			done = "brought " + d.Pod + " back into Raft"
		}
		if !slices.Contains(s.Completed, done) {
			s.Completed = append(s.Completed, done)
		}
		s.CurrentStep = nil
	case ActionFail:
		s.Failure = &baov1.UpgradeFailure{Reason: d.Reason, Message: d.Message, Pod: d.Pod, At: &now}
	}
	s.WaitingFor = d.WaitingFor
	if s.CurrentStep != nil && d.Action != ActionCompleteStep && d.Action != ActionFail && s.Failure == nil {
		s.CurrentStep.WaitingFor = d.WaitingFor
	}
}

// Start is the status of a new operation.
func Start(id string, from, target int32, now time.Time) *baov1.ScalingStatus {
	t := metav1.NewTime(now)
	return &baov1.ScalingStatus{ID: id, FromReplicas: from, TargetReplicas: target, StartedAt: &t}
}
