package snapshot

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// TestRestoreChecksTheCanary: a restore whose snapshot holds a canary is verified
// only once the controller read that value back, both into a new cluster and in
// place; another value, or none, fails it at once; a read that fails waits.
func TestRestoreChecksTheCanary(t *testing.T) {
	const want = "ns/bao/requested-2.4.0-20261206T100000Z-1.snap"
	now := t0.Add(2 * time.Minute)
	tests := []struct {
		reason   string
		read     *operation.CanaryRead
		wantStep baov1.RestoreStep
		wantText string
	}{
		{reason: "the value the receipt records: verified", read: &operation.CanaryRead{Value: want, Found: true}, wantStep: baov1.RestoreStepDone, wantText: `restore canary "` + want + `" read back`},
		{reason: "not read this pass: wait", wantStep: baov1.RestoreStepCheck, wantText: "not read yet"},
		{reason: "a read the policy refuses: wait (and fail at the check's timeout)", read: &operation.CanaryRead{Err: "openbao: permission denied"},
			wantStep: baov1.RestoreStepCheck, wantText: "cannot be read with the controller's role: openbao: permission denied"},
		{reason: "another value: the data is not the snapshot's, failed at once", read: &operation.CanaryRead{Value: "ns/bao/other.snap", Found: true},
			wantStep: baov1.RestoreStepFailed, wantText: `holds "ns/bao/other.snap", not "` + want + `"`},
		{reason: "no canary at all: failed at once", read: &operation.CanaryRead{}, wantStep: baov1.RestoreStepFailed, wantText: "has no restore canary"},
	}
	for _, tt := range tests {
		t.Run("new cluster/"+tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			c := restoreCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Bootstrap.FromSnapshot.Canary = want }, atStep(baov1.RestoreStepCheck, 0))
			g.Expect(CanaryExpected(c)).To(Equal(want), "the controller reads the canary while the restore is checked")
			s := restoreSnap(c, now, []operation.Member{member0()}, nil)
			s.Canary = tt.read
			p := RestoreOperation{}.Decide(s)
			r := p.Status.Restore
			g.Expect(r.Step).To(Equal(tt.wantStep))
			text := r.WaitingFor + r.Failure
			for _, ev := range p.Events {
				text += ev.Message
			}
			g.Expect(text).To(ContainSubstring(tt.wantText))
			if tt.wantStep == baov1.RestoreStepDone {
				g.Expect(r.Canary).To(Equal(want))
			}
		})
		t.Run("in place/"+tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			c := servingCluster(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Taken[0].Canary = want }, inPlaceAt(baov1.RestoreStepCheck, 0))
			g.Expect(CanaryExpected(c)).To(Equal(want))
			cl := &operation.Cluster{Now: now, Members: threeServing(401), AutopilotKnown: true, AutopilotHealthy: true, Leader: "bao-1", LeaderIndex: 401, Canary: tt.read}
			p := InPlaceRestoreOperation{}.Decide(&operation.Snapshot{Cluster: cl, Object: c, Jobs: map[string]operation.ObservedJob{}})
			r := p.Status.InPlaceRestore
			g.Expect(r.Step).To(Equal(tt.wantStep))
			text := r.WaitingFor + r.Failure
			for _, ev := range p.Events {
				text += ev.Message
			}
			g.Expect(text).To(ContainSubstring(tt.wantText))
		})
	}
}

func TestCanaryExpected(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CanaryExpected(restoreCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Bootstrap.FromSnapshot.Canary = "k" }, atStep(baov1.RestoreStepRestore, 1)))).
		To(BeEmpty(), "not before the check: nothing to read")
	g.Expect(CanaryExpected(restoreCluster(atStep(baov1.RestoreStepCheck, 0)))).To(BeEmpty(), "a snapshot without a canary: nothing to read")
	g.Expect(CanaryExpected(servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0)))).To(BeEmpty(), "a receipt without a canary")
	g.Expect(CanaryExpected(servingCluster())).To(BeEmpty(), "at rest")
	d, err := DrillCluster(servingCluster(func(c *baov1.OpenBaoCluster) {
		c.Status.Snapshots.Taken[0].Canary = "k"
		c.Status.Snapshots.Drills = &baov1.DrillsStatus{Current: &baov1.DrillRun{ID: "d1", Cluster: "bao-drill", Snapshot: inPlaceLoc, SHA256: inPlaceSHA,
			StartedAt: &metav1.Time{Time: t0}}}
	}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Spec.Bootstrap.FromSnapshot.Canary).To(Equal("k"), "a drill checks the canary its receipt records")
}
