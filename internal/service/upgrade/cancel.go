package upgrade

import (
	"fmt"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
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

// Retarget is what to do when spec.version no longer matches the running upgrade's
// target.
type Retarget struct {
	// Cancel is true when no member has been touched: the upgrade is dropped (after
	// the pod template is set back to FromImage) and the new spec.version, if it
	// differs from currentVersion, is planned afresh.
	Cancel bool
	// FromImage is the image every member still runs, for the pod template.
	FromImage string
	// Message says what happens, for the event and the status.
	Message string
}

// DecideRetarget decides what a changed spec.version means for a running upgrade.
// Until a member's pod has been deleted, nothing of the cluster's versions changed,
// and the upgrade can be dropped safely: the snapshot (if any) stays in the object
// store, a leadership transfer only moved the leader between members of the old
// version. From the first pod deletion on, the upgrade finishes to the version it
// planned, and the new spec.version is planned afterwards (or refused, if it is now a
// downgrade).
func DecideRetarget(up *baov1.UpgradeStatus, c *Cluster, desiredVersion string) Retarget {
	if up == nil || SameVersion(desiredVersion, up.TargetVersion) {
		return Retarget{}
	}
	finish := Retarget{Message: fmt.Sprintf("spec.version changed to %s during the upgrade to %s after a member was replaced: "+
		"the upgrade finishes to %s first, then %s is planned", desiredVersion, up.TargetVersion, up.TargetVersion, desiredVersion)}
	if len(up.CompletedPods) > 0 {
		return finish
	}
	if st := up.CurrentStep; st != nil {
		switch st.Action {
		case StepTakeSnapshot, StepTransferLeadership:
		case StepReplaceMember:
			m := c.Member(st.Pod)
			if m == nil || !m.PodExists || m.PodTerminating || m.Image == up.TargetImage {
				return finish
			}
		default:
			return finish
		}
	}
	from := ""
	for _, m := range c.Members {
		if !m.PodExists || m.PodTerminating || m.Image == "" || m.Image == up.TargetImage || (from != "" && m.Image != from) {
			// A member is missing, replaced, or members disagree: not provably untouched.
			return finish
		}
		from = m.Image
	}
	return Retarget{Cancel: true, FromImage: from, Message: fmt.Sprintf(
		"spec.version changed to %s before any member of the upgrade from %s to %s was replaced: the upgrade is cancelled",
		desiredVersion, up.FromVersion, up.TargetVersion)}
}
