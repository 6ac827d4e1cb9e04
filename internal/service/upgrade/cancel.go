package upgrade

import (
	"fmt"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Step actions stored in status.*.currentStep.action; the strategy packages name
// them from here. They are the API's StepAction values.
const (
	// StepTakeSnapshot is the pre-upgrade snapshot.
	StepTakeSnapshot = baov1.StepTakeSnapshot
	// StepTransferLeadership is the step of the leader before its replacement.
	StepTransferLeadership = baov1.StepTransferLeadership
	// StepReplaceMember is the replacement of a member's pod.
	StepReplaceMember = baov1.StepReplaceMember
	// StepPromoteMember makes a member that is in Raft as a non-voter a voter.
	StepPromoteMember = baov1.StepPromoteMember
	// StepDemoteMember makes a voter a non-voter.
	StepDemoteMember = baov1.StepDemoteMember
	// StepRemoveMember takes a member out of the Raft configuration.
	StepRemoveMember = baov1.StepRemoveMember
)

// Retarget is what to do when spec.version (or spec.image) no longer matches the
// running upgrade's target.
type Retarget struct {
	// Cancel is true when no member has run the target: the upgrade is dropped (after
	// the pod template is set back to FromImage, and the members in Recreate are
	// re-created on it) and the new spec.version, if it differs from currentVersion,
	// is planned afresh.
	Cancel bool
	// FromImage is the image every member that ran anything still runs, for the pod
	// template.
	FromImage string
	// Recreate are the members whose pods are on the target image but never started
	// (ErrImagePull, never scheduled): deleted once the template is back on
	// FromImage, so that they come back on it.
	Recreate []string
	// Message says what happens, for the event and the status.
	Message string
}

// pullFailures are the waiting reasons of a container whose image was never pulled.
var pullFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// NeverStartedReason reports whether a container waiting for reason, restarted
// restarts times and terminated before (or not), never ran: its image could not be
// pulled, and it never ran before either.
func NeverStartedReason(reason string, restarts int32, terminatedBefore bool) bool {
	return pullFailures[reason] && restarts == 0 && !terminatedBefore
}

// DecideRetarget decides what a changed spec.version, or a changed spec.image at the
// same version (desiredImage; "" when not known), means for a running upgrade.
// Until a member has run the target, nothing of the cluster's versions changed, and
// the upgrade can be dropped safely: the snapshot (if any) stays in the object store,
// a leadership transfer only moved the leader between members of the old version, and
// a member whose pod is on the target image but never started (the image cannot be
// pulled: a wrong tag, a registry without it) never opened its data with it, so it is
// re-created on the old image. From the first member that ran the target on, the
// upgrade finishes to the version it planned, and the new spec.version is planned
// afterwards (or refused, if it is now a downgrade).
func DecideRetarget(up *baov1.UpgradeStatus, c *operation.Cluster, desiredVersion, desiredImage string) Retarget {
	if up == nil {
		return Retarget{}
	}
	what := fmt.Sprintf("spec.version changed to %s", desiredVersion)
	if SameVersion(desiredVersion, up.TargetVersion) {
		if desiredImage == "" || desiredImage == up.TargetImage || up.Kind == baov1.OperationRollout {
			return Retarget{}
		}
		what = fmt.Sprintf("spec.image changed to %s", desiredImage)
	}
	finish := Retarget{Message: fmt.Sprintf("%s during the upgrade to %s after a member ran it: "+
		"the upgrade finishes to %s first, then the new target is planned", what, up.TargetVersion, up.TargetVersion)}
	if len(up.CompletedPods) > 0 {
		return finish
	}
	ranTarget := func(m *operation.Member) bool { return m.Image == up.TargetImage && !m.NeverStarted }
	if st := up.CurrentStep; st != nil {
		switch st.Action {
		case StepTakeSnapshot, StepTransferLeadership:
		case StepReplaceMember:
			m := c.Member(st.Pod)
			if m == nil || !m.PodExists || m.PodTerminating || ranTarget(m) {
				return finish
			}
		default:
			return finish
		}
	}
	from := ""
	var recreate []string
	for i := range c.Members {
		m := &c.Members[i]
		if m.PodExists && !m.PodTerminating && m.Image == up.TargetImage && m.NeverStarted {
			recreate = append(recreate, m.Name)
			continue
		}
		if !m.PodExists || m.PodTerminating || m.Image == "" || m.Image == up.TargetImage || (from != "" && m.Image != from) {
			// A member is missing, ran the target, or members disagree: not provably
			// untouched.
			return finish
		}
		from = m.Image
	}
	if from == "" {
		return finish
	}
	msg := fmt.Sprintf("%s before any member of the upgrade from %s to %s ran it: the upgrade is cancelled", what, up.FromVersion, up.TargetVersion)
	if len(recreate) > 0 {
		msg = fmt.Sprintf("%s while %s on %s never started (its image was never pulled, so its data was never opened by it): the upgrade from %s to %s is cancelled, "+
			"and %s comes back on %s", what, strings.Join(recreate, ", "), up.TargetImage, up.FromVersion, up.TargetVersion, strings.Join(recreate, ", "), from)
	}
	return Retarget{Cancel: true, FromImage: from, Recreate: recreate, Message: msg}
}
