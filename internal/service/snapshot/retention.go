package snapshot

import (
	"fmt"
	"slices"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Object is one snapshot object as the bucket lists it.
type Object struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"lastModified"`
}

// Retention is spec.snapshots.retention, parsed: keep the newest Count objects
// (0: any number) and none older than MaxAge (0: any age).
type Retention struct {
	Count  int
	MaxAge time.Duration
}

// RetentionOf parses spec.snapshots.retention; ok is false without one.
func RetentionOf(r *baov1.SnapshotRetention) (ret Retention, ok bool) {
	if r == nil || (r.Count == nil && r.MaxAge == nil) {
		return Retention{}, false
	}
	if r.Count != nil {
		ret.Count = int(*r.Count)
	}
	ret.MaxAge = baov1.DurationOr(r.MaxAge, 0)
	return ret, true
}

// PrunePlan says which objects retention deletes and which it keeps, and why each
// protected one stays.
type PrunePlan struct {
	Delete []Object
	Keep   []Object
}

// PlanPrune decides, over one listing of the cluster's snapshot objects, what
// retention deletes: objects beyond the newest Count, and objects older than MaxAge.
// Never deleted: the newest object, and every key in protected (the newest verified
// snapshot, the snapshot an upgrade's receipt names). Objects that are not
// snapshots (no .snap suffix) are not the operator's and are left alone. Pure: the
// executor lists and deletes, this decides.
func PlanPrune(objects []Object, r Retention, protected []string, now time.Time) PrunePlan {
	var snaps []Object
	for _, o := range objects {
		if strings.HasSuffix(o.Key, ".snap") {
			snaps = append(snaps, o)
		}
	}
	slices.SortFunc(snaps, func(a, b Object) int {
		if c := b.LastModified.Compare(a.LastModified); c != 0 {
			return c
		}
		return strings.Compare(b.Key, a.Key)
	})
	var p PrunePlan
	for i, o := range snaps {
		expired := (r.Count > 0 && i >= r.Count) || (r.MaxAge > 0 && now.Sub(o.LastModified) > r.MaxAge)
		if i == 0 || !expired || slices.Contains(protected, o.Key) {
			p.Keep = append(p.Keep, o)
			continue
		}
		p.Delete = append(p.Delete, o)
	}
	return p
}

// PruneResult is what a prune Job reports, as one JSON object, in its termination
// message: how many objects it listed, which it deleted, and the deletion the
// bucket refused (after which it deleted nothing more).
type PruneResult struct {
	Listed  int      `json:"listed"`
	Deleted []string `json:"deleted"`
	Kept    int      `json:"kept"`
	Failed  string   `json:"failed,omitempty"`
}

// Summary says it in a sentence.
func (r PruneResult) Summary() string {
	s := fmt.Sprintf("pruned %d of %d snapshot objects, kept %d", len(r.Deleted), r.Listed, r.Kept)
	if r.Failed != "" {
		s += "; " + r.Failed
	}
	return s
}

// ProtectedKeys are the object keys retention never deletes: the newest verified
// snapshot (the newest receipt of status.snapshots), the snapshot the upgrade in
// progress took (status.upgrade.snapshot), which is its way back, and the one the
// last upgrade started from (status.lastSnapshot), the way back to the version
// before it. bucket is the target's: receipts of another bucket name nothing here.
func ProtectedKeys(st *baov1.OpenBaoClusterStatus, bucket string) []string {
	var keys []string
	add := func(r *baov1.SnapshotReceipt) {
		if r == nil {
			return
		}
		if k, ok := strings.CutPrefix(r.Location, Location(bucket, "")); ok && k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	add(st.LastSnapshot)
	if st.Upgrade != nil {
		add(st.Upgrade.Snapshot)
	}
	if ss := st.Snapshots; ss != nil {
		if len(ss.Taken) > 0 {
			add(&ss.Taken[0])
		}
		if ss.Current != nil {
			add(ss.Current.Receipt)
		}
	}
	return keys
}
