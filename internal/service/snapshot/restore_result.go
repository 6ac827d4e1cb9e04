package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Executor actions of restoring a snapshot into a new cluster.
const (
	// ActionRestore is the executor action that downloads a snapshot object,
	// checks it against its receipt's SHA-256 and restores it into the cluster
	// (sys/storage/raft/snapshot-force). It reports a RestoreResult.
	ActionRestore = "restore"
	// ActionRebind is the executor action that rewrites the two JWT roles a
	// cluster restored from another cluster's snapshot inherited (bound to the
	// source's identities) to the cluster's own. It reports a RebindResult.
	ActionRebind = "rebind"
)

// RestoreResult is what a restore Job reports, as one JSON object, on stdout and
// in its termination message.
type RestoreResult struct {
	// Location is the object restored, s3://<bucket>/<key>.
	Location string `json:"location"`
	// SHA256 is the hex SHA-256 of the object, equal to the receipt's.
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"sizeBytes"`
	// RaftIndex and RaftTerm are what the archive's meta.json says.
	RaftIndex uint64 `json:"raftIndex"`
	RaftTerm  uint64 `json:"raftTerm"`
	// RestoredTo is the node ID of the active node that took the snapshot in.
	RestoredTo string    `json:"restoredTo"`
	RestoredAt time.Time `json:"restoredAt"`
	// AppliedIndex is the active node's Raft committed index once it applied the
	// snapshot (--wait-applied: above the index it had before); 0 otherwise.
	AppliedIndex uint64 `json:"appliedIndex,omitempty"`
}

// ParseRestoreResult reads a restore result from a termination message and
// checks that it names what was restored.
func ParseRestoreResult(s string) (RestoreResult, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return RestoreResult{}, fmt.Errorf("the restore Job's termination message is empty")
	}
	var r RestoreResult
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return RestoreResult{}, fmt.Errorf("the restore Job's termination message is not a restore result: %w", err)
	}
	var missing []string
	if r.Location == "" {
		missing = append(missing, "location")
	}
	if r.SHA256 == "" {
		missing = append(missing, "sha256")
	}
	if len(missing) > 0 {
		return RestoreResult{}, fmt.Errorf("the restore Job's result lacks %s", strings.Join(missing, ", "))
	}
	return r, nil
}

// RebindResult is what a rebind Job reports, as one JSON object, on stdout and in
// its termination message: the identities the two JWT roles are bound to now.
type RebindResult struct {
	Rebound           bool   `json:"rebound"`
	ExecutorSubject   string `json:"executorSubject"`
	ControllerSubject string `json:"controllerSubject"`
	Audience          string `json:"audience"`
}
