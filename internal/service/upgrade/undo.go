package upgrade

import (
	"fmt"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// RestoreRunbook is the runbook of the way back once an upgrade passed its point of
// no return.
const RestoreRunbook = "docs/runbooks/restore-from-snapshot.md"

// UndoInput is what the undo path of an upgrade names.
type UndoInput struct {
	// Name and Namespace of the cluster, for the commands.
	Name, Namespace string
	Strategy        baov1.UpgradeStrategyType
	// From is the version the members run; ImageOnly is true for a new image at it,
	// RunningImage the image they run.
	From         string
	ImageOnly    bool
	RunningImage string
	// Blue is the serving StatefulSet, Green the one a blue-green upgrade creates.
	Blue, Green string
}

// UndoPath says how to undo an upgrade, in the same words wherever it is shown: in
// status.upgrade.plan.undoPath (the operator) and in kubectl bao plan.
func UndoPath(in UndoInput) string {
	switch {
	case in.ImageOnly:
		return fmt.Sprintf("the version stays %s: set spec.image back to the image the members ran before (%s) and the same rolling replacement runs again",
			in.From, in.RunningImage)
	case in.Strategy == baov1.BlueGreenStrategy:
		return fmt.Sprintf("blue (%s, on %s) keeps the leadership until green (%s) leads; until then, kubectl bao rollback %s -n %s "+
			"(or kubectl annotate openbaocluster %s -n %s %s=$(date +%%s) --overwrite) rolls back: blue votes again, green is removed and deleted. "+
			"Once a green member has led (status.blueGreen.leaderMovedAt), blue is never promoted again: the way back is the pre-upgrade snapshot (%s)",
			in.Blue, in.From, in.Green, in.Name, in.Namespace, in.Name, in.Namespace, baov1.AnnotationRollback, RestoreRunbook)
	}
	return fmt.Sprintf("OpenBao does not support downgrades in place: before the first member is replaced, set spec.version back to %s (the upgrade is cancelled); "+
		"afterwards, restore the pre-upgrade snapshot into a new cluster at %s (%s)", in.From, in.From, RestoreRunbook)
}
