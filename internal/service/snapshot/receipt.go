package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Receipt is what a snapshot Job reports, as one JSON object, on stdout and in its
// termination message.
type Receipt struct {
	Location   string    `json:"location"`
	SizeBytes  int64     `json:"sizeBytes"`
	SHA256     string    `json:"sha256"`
	RaftIndex  uint64    `json:"raftIndex"`
	RaftTerm   uint64    `json:"raftTerm"`
	FromMember string    `json:"fromMember"`
	TakenAt    time.Time `json:"takenAt"`
	// Canary is the restore canary's value written just before the snapshot;
	// empty when the cluster has none.
	Canary string `json:"canary,omitempty"`
}

// ParseReceipt reads a receipt from a termination message and checks that it says
// everything a status receipt needs.
func ParseReceipt(msg string) (*Receipt, error) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return nil, fmt.Errorf("the Job's termination message is empty")
	}
	var r Receipt
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return nil, fmt.Errorf("the Job's termination message is not a receipt: %w", err)
	}
	var missing []string
	if !strings.HasPrefix(r.Location, "s3://") {
		missing = append(missing, "location")
	}
	if r.SizeBytes <= 0 {
		missing = append(missing, "sizeBytes")
	}
	if len(r.SHA256) != 64 {
		missing = append(missing, "sha256")
	}
	if r.TakenAt.IsZero() {
		missing = append(missing, "takenAt")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the Job's receipt lacks %s", strings.Join(missing, ", "))
	}
	return &r, nil
}

// Status is the receipt as recorded in status, with the version the cluster ran.
func (r *Receipt) Status(version string) *baov1.SnapshotReceipt {
	t := metav1.NewTime(r.TakenAt)
	return &baov1.SnapshotReceipt{
		Location: r.Location, TakenAt: &t, SizeBytes: r.SizeBytes, SHA256: r.SHA256,
		RaftIndex: int64(r.RaftIndex), FromMember: r.FromMember, Version: version, Canary: r.Canary,
	}
}
