package upgrade

import (
	"fmt"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// RestoreRunbook is the page of the way back once an upgrade passed its point of no
// return: the pre-upgrade snapshot restored into a new cluster (kubectl bao restore).
const RestoreRunbook = "docs/restore.md"

// RestoreCommand is that way back as one command: the pre-upgrade snapshot
// (status.lastSnapshot) restored into a new cluster at the version before the
// upgrade. name is "CLUSTER" where the caller does not know it.
func RestoreCommand(name, namespace, version string) string {
	ns := ""
	if namespace != "" {
		ns = " -n " + namespace
	}
	return fmt.Sprintf("kubectl bao restore %s%s --into %s-back --sha256 <status.lastSnapshot.sha256> --version %s", name, ns, name, version)
}

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
	case in.Strategy == baov1.OfflineStrategy:
		return fmt.Sprintf("OpenBao does not support downgrades in place: before the members are stopped (status.upgrade.offline.stoppedAt), set spec.version back to %s "+
			"(the upgrade is cancelled); afterwards, restore the pre-upgrade snapshot into a new cluster at %s: %s (%s)",
			in.From, in.From, RestoreCommand(in.Name, in.Namespace, in.From), RestoreRunbook)
	case in.Strategy == baov1.BlueGreenStrategy:
		return fmt.Sprintf("blue (%s, on %s) keeps the leadership until green (%s) leads; until then, kubectl bao rollback %s -n %s "+
			"(or kubectl annotate openbaocluster %s -n %s %s=$(date +%%s) --overwrite) rolls back: blue votes again, green is removed and deleted. "+
			"Once a green member has led (status.blueGreen.leaderMovedAt), blue is never promoted again: the way back is the pre-upgrade snapshot, "+
			"restored into a new cluster: %s (%s)",
			in.Blue, in.From, in.Green, in.Name, in.Namespace, in.Name, in.Namespace, baov1.AnnotationRollback, RestoreCommand(in.Name, in.Namespace, in.From), RestoreRunbook)
	}
	return fmt.Sprintf("OpenBao does not support downgrades in place: before the first member is replaced, set spec.version back to %s (the upgrade is cancelled); "+
		"afterwards, restore the pre-upgrade snapshot into a new cluster at %s: %s (%s)", in.From, in.From, RestoreCommand(in.Name, in.Namespace, in.From), RestoreRunbook)
}
