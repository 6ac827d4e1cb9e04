package operation

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Operations that take the lock.
const (
	// OperationRollingUpgrade is a rolling version change.
	OperationRollingUpgrade = "RollingUpgrade"
	// OperationScaling is a change of membership (spec.replicas).
	OperationScaling = "Scaling"
	// OperationBlueGreenUpgrade is a blue-green version change.
	OperationBlueGreenUpgrade = "BlueGreenUpgrade"
	// OperationOfflineUpgrade is a version change with every member stopped at once.
	OperationOfflineUpgrade = "OfflineUpgrade"
	// OperationRollout restarts every member on the current pod template.
	OperationRollout = "Rollout"
	// OperationSnapshot is a scheduled or requested snapshot (and its pruning).
	OperationSnapshot = "Snapshot"
	// OperationRestore restores a snapshot into a cluster that starts from one.
	OperationRestore = "Restore"
	// OperationDrill restores the newest snapshot into a short-lived drill cluster.
	OperationDrill = "RestoreDrill"
	// OperationRehearsal rehearses an upgrade on a copy restored from the newest
	// snapshot, on request (baokeeper.dev/rehearse).
	OperationRehearsal = "Rehearsal"
)

// HolderUpgradeManager is the holder name of the adminops reconciler.
const HolderUpgradeManager = "baokeeper/openbaocluster-upgrade"

// HeldByOther returns the lock when an operation other than op holds it, else nil.
func HeldByOther(st *baov1.OpenBaoClusterStatus, op string) *baov1.OperationLock {
	if l := st.OperationLock; l != nil && l.Operation != op {
		return l
	}
	return nil
}

// Acquire takes the lock for op, or keeps it if op already holds it. It fails,
// naming the holder, when another operation holds it.
func Acquire(st *baov1.OpenBaoClusterStatus, op, holder, message string, now time.Time) error {
	if l := HeldByOther(st, op); l != nil {
		return fmt.Errorf("operation %s (%s) holds the cluster since %s: %s", l.Operation, l.Holder, formatTime(l.AcquiredAt), l.Message)
	}
	if st.OperationLock != nil {
		st.OperationLock.Message = message
		return nil
	}
	t := metav1.NewTime(now)
	st.OperationLock = &baov1.OperationLock{Operation: op, Holder: holder, Message: message, AcquiredAt: &t}
	return nil
}

// Release drops the lock if op holds it.
func Release(st *baov1.OpenBaoClusterStatus, op string) {
	if st.OperationLock != nil && st.OperationLock.Operation == op {
		st.OperationLock = nil
	}
}

func formatTime(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}
