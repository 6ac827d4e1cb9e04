package rolling

import (
	"fmt"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// ToAction maps a decision onto the closed set of actions every strategy's
// executor carries out (operation.Action): a decision that only records an intent is a
// Persist, the pod template's image an Apply, a member's pod a Delete, a step-down or
// a promotion a CreateJob. targetImage and targetVersion are the upgrade's, for the
// events.
func ToAction(d Decision, targetImage, targetVersion string) operation.Action {
	a := operation.Action{Member: d.Pod, WaitingFor: d.WaitingFor, Reason: d.Reason, Message: d.Message, RequeueAfter: d.RequeueAfter}
	switch d.Action {
	case ActionUpdateTemplate:
		a.Kind, a.Object = operation.KindApply, operation.ObjectPodTemplate
	case ActionStepDown:
		a.Kind, a.Job = operation.KindCreateJob, operation.JobStepDown
	case ActionPromote:
		a.Kind, a.Job = operation.KindCreateJob, operation.JobPromote
	case ActionDeletePod:
		a.Kind, a.Object = operation.KindDelete, operation.ObjectPod
		a.Event = fmt.Sprintf("Replacing %s with %s", d.Pod, targetImage)
	case ActionBeginStep, ActionGatesPassed:
		a.Kind = operation.KindPersist
	case ActionStepDownVerified:
		a.Kind, a.Event = operation.KindPersist, d.WaitingFor
	case ActionCompleteMember:
		a.Kind, a.Event = operation.KindPersist, fmt.Sprintf("%s upgraded to %s", d.Pod, targetVersion)
	case ActionComplete:
		a.Kind = operation.KindComplete
	case ActionFail:
		a.Kind = operation.KindFail
	case ActionHold:
		a.Kind = operation.KindHold
	default:
		a.Kind = operation.KindWait
	}
	return a
}
