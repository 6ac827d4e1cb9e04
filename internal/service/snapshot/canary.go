package snapshot

import (
	"fmt"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The restore canary: before every snapshot the executor writes one value (the
// object's key) to workload.CanaryPath and the receipt records it; a restore of that
// snapshot is verified only once the controller reads the same value back from the
// restored data. It proves what the checksum and the Raft index cannot: that the
// data written just before the snapshot is in the cluster that restored it, readable
// through a secrets engine as user data is. A cluster initialized before baokeeper
// wrote the canary takes snapshots without one, and their restores are verified
// without it.

// canaryOf is the canary the receipt with that SHA-256 records; "" for none.
func canaryOf(st *baov1.OpenBaoClusterStatus, sha string) string {
	if r := FindReceipt(st, sha); r != nil {
		return r.Canary
	}
	return ""
}

// CanaryExpected is the canary value this pass must read, when a restore whose
// snapshot holds one is being verified: a cluster that started from a snapshot, at
// its Check step, or an in-place restore at its Check step. "" otherwise: the
// controller reads nothing.
func CanaryExpected(c *baov1.OpenBaoCluster) string {
	st := &c.Status
	if b := c.Spec.Bootstrap; b != nil && st.Restore != nil && st.Restore.Step == baov1.RestoreStepCheck {
		return b.FromSnapshot.Canary
	}
	if r := st.InPlaceRestore; InPlaceRunning(st) && r.Step == baov1.RestoreStepCheck {
		return canaryOf(st, r.SHA256)
	}
	return ""
}

// canaryVerdict judges the canary read against want: ok when it holds want (or
// want is empty); otherwise why not, and whether the data is certainly not the
// snapshot's (another value, or no canary at all), which no waiting mends.
func canaryVerdict(want string, read *operation.CanaryRead) (ok bool, why string, wrong bool) {
	switch {
	case want == "":
		return true, "", false
	case read == nil:
		return false, "the restore canary was not read yet", false
	case read.Err != "":
		return false, fmt.Sprintf("the restore canary %s cannot be read with the controller's role: %s", workload.CanaryPath, read.Err), false
	case !read.Found:
		return false, fmt.Sprintf("the restored data has no restore canary at %s, but the snapshot's receipt records %q: the data is not that snapshot's", workload.CanaryPath, want), true
	case read.Value != want:
		return false, fmt.Sprintf("the restore canary %s holds %q, not %q as the snapshot's receipt records: the data is not that snapshot's", workload.CanaryPath, read.Value, want), true
	}
	return true, "", false
}

// canaryWords says, for an event, that the canary was read back.
func canaryWords(canary string) string {
	if canary == "" {
		return ""
	}
	return fmt.Sprintf(" (restore canary %q read back)", canary)
}
