package rolling

import (
	"fmt"

	"github.com/baokeeper/baokeeper/internal/service/upgrade/core"
)

// ToAction maps a decision onto the closed set of actions every strategy's
// executor carries out (core.Action): a decision that only records an intent is a
// Persist, the pod template's image an Apply, a member's pod a Delete, a step-down or
// a promotion a CreateJob. targetImage and targetVersion are the upgrade's, for the
// events.
func ToAction(d Decision, targetImage, targetVersion string) core.Action {
	a := core.Action{Member: d.Pod, WaitingFor: d.WaitingFor, Reason: d.Reason, Message: d.Message, RequeueAfter: d.RequeueAfter}
	switch d.Action {
	case ActionUpdateTemplate:
		a.Kind, a.Object = core.KindApply, core.ObjectPodTemplate
	case ActionStepDown:
		a.Kind, a.Job = core.KindCreateJob, core.JobStepDown
	case ActionPromote:
		a.Kind, a.Job = core.KindCreateJob, core.JobPromote
	case ActionDeletePod:
		a.Kind, a.Object = core.KindDelete, core.ObjectPod
		a.Event = fmt.Sprintf("Replacing %s with %s", d.Pod, targetImage)
	case ActionBeginStep, ActionGatesPassed:
		a.Kind = core.KindPersist
	case ActionStepDownVerified:
		a.Kind, a.Event = core.KindPersist, d.WaitingFor
	case ActionCompleteMember:
		a.Kind, a.Event = core.KindPersist, fmt.Sprintf("%s upgraded to %s", d.Pod, targetVersion)
	case ActionComplete:
		a.Kind = core.KindComplete
	case ActionFail:
		a.Kind = core.KindFail
	case ActionHold:
		a.Kind = core.KindHold
	default:
		a.Kind = core.KindWait
	}
	return a
}
