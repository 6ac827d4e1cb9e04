package snapshot

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestPlanPrune(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	// k0 is the newest, k5 the oldest, one hour apart.
	objs := func(n int) []Object {
		var out []Object
		for i := n - 1; i >= 0; i-- { // listed oldest first: the plan sorts
			out = append(out, Object{Key: fmt.Sprintf("ns/bao/k%d.snap", i), Size: 10, LastModified: now.Add(-time.Duration(i) * time.Hour)})
		}
		return out
	}
	keys := func(os []Object) []string {
		out := []string{}
		for _, o := range os {
			out = append(out, o.Key[len("ns/bao/"):])
		}
		return out
	}
	cases := []struct {
		name       string
		objects    []Object
		r          Retention
		protected  []string
		wantDelete []string
		wantKeep   []string
	}{
		{name: "count keeps the newest", objects: objs(5), r: Retention{Count: 2},
			wantDelete: []string{"k2.snap", "k3.snap", "k4.snap"}, wantKeep: []string{"k0.snap", "k1.snap"}},
		{name: "maxAge deletes older objects", objects: objs(5), r: Retention{MaxAge: 150 * time.Minute},
			wantDelete: []string{"k3.snap", "k4.snap"}, wantKeep: []string{"k0.snap", "k1.snap", "k2.snap"}},
		{name: "both: an object goes when either says so", objects: objs(5), r: Retention{Count: 4, MaxAge: 150 * time.Minute},
			wantDelete: []string{"k3.snap", "k4.snap"}, wantKeep: []string{"k0.snap", "k1.snap", "k2.snap"}},
		{name: "a protected object stays beyond the count", objects: objs(5), r: Retention{Count: 1}, protected: []string{"ns/bao/k3.snap"},
			wantDelete: []string{"k1.snap", "k2.snap", "k4.snap"}, wantKeep: []string{"k0.snap", "k3.snap"}},
		{name: "the newest stays even when older than maxAge", objects: objs(3)[:1], r: Retention{MaxAge: time.Minute},
			wantDelete: []string{}, wantKeep: []string{"k2.snap"}},
		{name: "objects that are not snapshots are left alone", r: Retention{Count: 1},
			objects:    append(objs(2), Object{Key: "ns/bao/notes.txt", LastModified: now.Add(-48 * time.Hour)}),
			wantDelete: []string{"k1.snap"}, wantKeep: []string{"k0.snap"}},
		{name: "an empty bucket deletes nothing", r: Retention{Count: 1}, wantDelete: []string{}, wantKeep: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := PlanPrune(tc.objects, tc.r, tc.protected, now)
			g.Expect(keys(p.Delete)).To(Equal(tc.wantDelete))
			g.Expect(keys(p.Keep)).To(Equal(tc.wantKeep))
		})
	}
}

func TestProtectedKeys(t *testing.T) {
	g := NewWithT(t)
	at := metav1.NewTime(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	rec := func(key string, trig baov1.SnapshotTrigger) *baov1.SnapshotReceipt {
		return &baov1.SnapshotReceipt{Location: Location("b", key), TakenAt: &at, Trigger: trig}
	}
	st := &baov1.OpenBaoClusterStatus{
		LastSnapshot: rec("p/ns/bao/pre1.snap", baov1.SnapshotPreUpgrade),
		Upgrade:      &baov1.UpgradeStatus{Snapshot: rec("p/ns/bao/up.snap", baov1.SnapshotPreUpgrade)},
		Snapshots: &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{
			*rec("p/ns/bao/s3.snap", baov1.SnapshotScheduled),
			*rec("p/ns/bao/s2.snap", baov1.SnapshotRequested),
			*rec("p/ns/bao/pre1.snap", baov1.SnapshotPreUpgrade),
			*rec("p/ns/bao/pre0.snap", baov1.SnapshotPreUpgrade),
		}},
	}
	g.Expect(ProtectedKeys(st, "b")).To(ConsistOf("p/ns/bao/s3.snap", "p/ns/bao/up.snap", "p/ns/bao/pre1.snap"),
		"the newest verified, the running upgrade's own and the one the last upgrade started from; older ones may go")
	g.Expect(ProtectedKeys(st, "other")).To(BeEmpty(), "receipts of another bucket name nothing in this one")
}
