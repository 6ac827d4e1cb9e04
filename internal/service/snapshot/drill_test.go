package snapshot

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// drillSource is a 3-member cluster with a bucket, a verify schedule and one
// verified snapshot.
func drillSource(mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	c := runCluster(func(c *baov1.OpenBaoCluster) {
		c.Spec.Version = "2.4.0"
		c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "http://s3:9000", Bucket: "snaps", Prefix: "p", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
		c.Spec.Snapshots.Verify = &baov1.SnapshotVerifySpec{Schedule: "0 3 * * *"}
		c.Status.Snapshots = &baov1.SnapshotsStatus{
			Taken:  []baov1.SnapshotReceipt{{Location: "s3://snaps/p/ns/bao/requested-2.4.0-x-1.snap", SHA256: restoreSHA, TakenAt: &metav1.Time{Time: t0.Add(-time.Hour)}, Version: "2.4.0", RaftIndex: 50}},
			Drills: &baov1.DrillsStatus{},
		}
	})
	for _, m := range mut {
		m(c)
	}
	return c
}

func drillDue(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Drills.Due = &metav1.Time{Time: t0} }

func drillAt(step baov1.DrillStep, mut ...func(*baov1.DrillRun)) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		run := &baov1.DrillRun{ID: "d1d1d1d1", Cluster: "bao-drill", Snapshot: "s3://snaps/p/ns/bao/requested-2.4.0-x-1.snap", SHA256: restoreSHA,
			StartedAt: &metav1.Time{Time: t0}, Step: step}
		for _, m := range mut {
			m(run)
		}
		c.Status.Snapshots.Drills.Current = run
		c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationDrill, Holder: operation.HolderUpgradeManager}
	}
}

// drillChild is the drill cluster as observed, with its restore at step.
func drillChild(id string, step baov1.RestoreStep) *baov1.OpenBaoCluster {
	d := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao-drill", Namespace: "ns", Labels: map[string]string{LabelDrillOf: "bao", LabelDrillID: id}}}
	if step != "" {
		d.Status.Restore = &baov1.RestoreStatus{Step: step, RaftIndex: 50, Failure: "the object has sha256 00, not 5f as its receipt says", WaitingFor: "reading"}
	}
	return d
}

func healthyMembers() []operation.Member {
	var out []operation.Member
	for i, n := range []string{"bao-0", "bao-1", "bao-2"} {
		out = append(out, operation.Member{Name: n, Ordinal: i, PodExists: true, PodReady: true, Initialized: true, InRaft: true, Voter: true, Healthy: true})
	}
	return out
}

func TestDrillOperation(t *testing.T) {
	now := t0.Add(5 * time.Minute)
	tests := []struct {
		reason    string
		c         *baov1.OpenBaoCluster
		drill     *baov1.OpenBaoCluster
		members   []operation.Member
		unhealthy bool

		wantKind    operation.Kind
		wantObject  operation.Object
		wantStep    baov1.DrillStep // "" for no drill in progress
		wantLock    bool
		wantOutcome baov1.DrillOutcome // of status.snapshots.drills.last or current.result
		wantEvent   baov1.Reason
		wantText    string
	}{
		{reason: "a due drill takes the lock and records the newest receipt before anything",
			c: drillSource(drillDue), wantKind: operation.KindPersist, wantStep: baov1.DrillStepCreate, wantLock: true, wantEvent: EventDrillStarted},
		{reason: "a drill due while a member is not Ready is skipped, and says so",
			c: drillSource(drillDue), members: func() []operation.Member { m := healthyMembers(); m[1].PodReady = false; return m }(),
			wantKind: operation.KindPersist, wantOutcome: baov1.DrillSkipped, wantEvent: EventDrillSkipped, wantText: "the cluster is degraded (not Ready: bao-1)"},
		{reason: "a drill due while autopilot calls the cluster unhealthy is skipped",
			c: drillSource(drillDue), unhealthy: true,
			wantKind: operation.KindPersist, wantOutcome: baov1.DrillSkipped, wantEvent: EventDrillSkipped, wantText: "autopilot reports it unhealthy"},
		{reason: "no verified snapshot: skipped, saying how to take one",
			c:        drillSource(drillDue, func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Taken = nil }),
			wantKind: operation.KindPersist, wantOutcome: baov1.DrillSkipped, wantText: "kubectl bao snapshot bao --wait"},
		{reason: "create: the drill cluster is created from the persisted drill",
			c: drillSource(drillAt(baov1.DrillStepCreate)), wantKind: operation.KindApply, wantObject: operation.ObjectDrillCluster, wantStep: baov1.DrillStepCreate, wantLock: true},
		{reason: "create: a drill cluster of an earlier drill is deleted first",
			c: drillSource(drillAt(baov1.DrillStepCreate)), drill: drillChild("old", ""),
			wantKind: operation.KindDelete, wantObject: operation.ObjectDrillCluster, wantStep: baov1.DrillStepCreate, wantLock: true},
		{reason: "create: this drill's cluster exists: its restore is next",
			c: drillSource(drillAt(baov1.DrillStepCreate)), drill: drillChild("d1d1d1d1", ""),
			wantKind: operation.KindPersist, wantStep: baov1.DrillStepRestore, wantLock: true},
		{reason: "restore: waits while the drill cluster restores, saying its step",
			c: drillSource(drillAt(baov1.DrillStepRestore)), drill: drillChild("d1d1d1d1", baov1.RestoreStepRestart),
			wantKind: operation.KindWait, wantStep: baov1.DrillStepRestore, wantLock: true, wantText: "step Restart"},
		{reason: "restore: the drill cluster restored: passed, then deleted",
			c: drillSource(drillAt(baov1.DrillStepRestore)), drill: drillChild("d1d1d1d1", baov1.RestoreStepDone),
			wantKind: operation.KindPersist, wantStep: baov1.DrillStepDelete, wantLock: true, wantOutcome: baov1.DrillPassed, wantText: "at Raft index 50"},
		{reason: "restore: the drill cluster's restore failed (a corrupted object): failed with its words",
			c: drillSource(drillAt(baov1.DrillStepRestore)), drill: drillChild("d1d1d1d1", baov1.RestoreStepFailed),
			wantKind: operation.KindPersist, wantStep: baov1.DrillStepDelete, wantLock: true, wantOutcome: baov1.DrillFailed, wantText: "not 5f as its receipt says"},
		{reason: "restore: not done within the timeout: failed",
			c:        drillSource(drillAt(baov1.DrillStepRestore, func(r *baov1.DrillRun) { r.StartedAt = &metav1.Time{Time: now.Add(-21 * time.Minute)} })),
			drill:    drillChild("d1d1d1d1", baov1.RestoreStepCheck),
			wantKind: operation.KindPersist, wantStep: baov1.DrillStepDelete, wantLock: true, wantOutcome: baov1.DrillFailed, wantText: "did not restore"},
		{reason: "delete: the drill cluster is deleted",
			c:        drillSource(drillAt(baov1.DrillStepDelete, func(r *baov1.DrillRun) { r.Result = &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "ok"} })),
			drill:    drillChild("d1d1d1d1", baov1.RestoreStepDone),
			wantKind: operation.KindDelete, wantObject: operation.ObjectDrillCluster, wantStep: baov1.DrillStepDelete, wantLock: true, wantOutcome: baov1.DrillPassed},
		{reason: "delete: gone: the verdict is recorded and the lock released",
			c: drillSource(drillAt(baov1.DrillStepDelete, func(r *baov1.DrillRun) {
				r.Result = &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "ok", FinishedAt: &metav1.Time{Time: now}}
			})),
			wantKind: operation.KindPersist, wantOutcome: baov1.DrillPassed, wantEvent: EventDrillPassed},
		{reason: "delete: gone after a failure: a Warning that names the runbook",
			c: drillSource(drillAt(baov1.DrillStepDelete, func(r *baov1.DrillRun) {
				r.Result = &baov1.DrillResult{Outcome: baov1.DrillFailed, Message: "checksum"}
			})),
			wantKind: operation.KindPersist, wantOutcome: baov1.DrillFailed, wantEvent: EventDrillFailed, wantText: "BaokeeperRestoreDrillFailed.md"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			members := tt.members
			if members == nil {
				members = healthyMembers()
			}
			s := &operation.Snapshot{Cluster: &operation.Cluster{Now: now, Members: members, AutopilotKnown: true, AutopilotHealthy: !tt.unhealthy, Leader: "bao-0"},
				Object: tt.c, Jobs: map[string]operation.ObservedJob{}, Drill: tt.drill}
			before := tt.c.DeepCopy()
			p := DrillOperation{}.Decide(s)
			g.Expect(tt.c).To(Equal(before), "Decide must not change the snapshot")
			g.Expect(p.Kind).To(Equal(tt.wantKind))
			g.Expect(p.Object).To(Equal(tt.wantObject))
			st := &tt.c.Status
			if p.Status != nil {
				st = p.Status
			}
			d := st.Snapshots.Drills
			if tt.wantStep == "" {
				g.Expect(d.Current).To(BeNil())
			} else {
				g.Expect(d.Current).NotTo(BeNil())
				g.Expect(d.Current.Step).To(Equal(tt.wantStep))
			}
			g.Expect(st.OperationLock != nil).To(Equal(tt.wantLock), "lock")
			text := p.WaitingFor
			if tt.wantOutcome != "" {
				res := d.Last
				if d.Current != nil {
					res = d.Current.Result
				}
				g.Expect(res).NotTo(BeNil())
				g.Expect(res.Outcome).To(Equal(tt.wantOutcome))
				text += " " + res.Message
				if tt.wantOutcome == baov1.DrillPassed && d.Current == nil {
					g.Expect(d.LastPassedAt).NotTo(BeNil())
				}
			}
			var reasons []baov1.Reason
			for _, ev := range p.Events {
				reasons = append(reasons, ev.Reason)
				text += " " + ev.Message
			}
			if tt.wantEvent != "" {
				g.Expect(reasons).To(ContainElement(tt.wantEvent))
			}
			g.Expect(text).To(ContainSubstring(tt.wantText))
		})
	}
}

func TestDrillCluster(t *testing.T) {
	g := NewWithT(t)
	c := drillSource(drillAt(baov1.DrillStepCreate), func(c *baov1.OpenBaoCluster) {
		c.Spec.Replicas = ptrInt32(5)
		c.Spec.Snapshots.Schedule = "@hourly"
	})
	d, err := DrillCluster(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Name).To(Equal("bao-drill"))
	g.Expect(d.Labels).To(HaveKeyWithValue(LabelDrillOf, "bao"))
	g.Expect(d.Labels).To(HaveKeyWithValue(LabelDrillID, "d1d1d1d1"))
	g.Expect(metav1.IsControlledBy(d, c)).To(BeTrue(), "deleting the cluster deletes its drill")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
	g.Expect(d.Spec.Snapshots).To(Equal(baov1.SnapshotsSpec{}), "a drill cluster takes no snapshots and runs no drills")
	b := d.Spec.Bootstrap.FromSnapshot
	g.Expect(b.S3.Bucket).To(Equal("snaps"))
	g.Expect(b.S3.Prefix).To(BeEmpty())
	g.Expect(b.Key).To(Equal("p/ns/bao/requested-2.4.0-x-1.snap"))
	g.Expect(b.SHA256).To(Equal(restoreSHA))
	g.Expect(b.SourceCluster).To(Equal("bao"))
	g.Expect(b.SealKeySecretRef.Name).To(Equal("bao-seal"))
	g.Expect(d.Status).To(Equal(baov1.OpenBaoClusterStatus{}))

	long := drillSource(func(c *baov1.OpenBaoCluster) { c.Name = strings.Repeat("a", 38) })
	g.Expect(len(DrillClusterName(long))).To(BeNumerically("<=", 40))
	g.Expect(DrillClusterName(long)).NotTo(Equal(DrillClusterName(drillSource(func(c *baov1.OpenBaoCluster) { c.Name = strings.Repeat("a", 37) }))))
}

func TestTendDrills(t *testing.T) {
	g := NewWithT(t)
	c := drillSource(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Drills = nil })
	Tend(c, t0)
	d := c.Status.Snapshots.Drills
	g.Expect(d).NotTo(BeNil())
	g.Expect(d.NextScheduledAt.Time).To(Equal(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)))
	g.Expect(d.Due).To(BeNil())
	Tend(c, time.Date(2026, 12, 7, 3, 0, 5, 0, time.UTC))
	g.Expect(d.Due).NotTo(BeNil(), "its time came")
	g.Expect(DrillPending(&c.Status)).To(BeTrue())
	c.Spec.Snapshots.Verify = nil
	Tend(c, time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC))
	g.Expect(d.Due).To(BeNil(), "a removed schedule drops its due drill")
	g.Expect(d.NextScheduledAt).To(BeNil())
}

// A due drill outside every maintenance window waits and says until when; inside
// one it starts.
func TestTendDrillsInWindows(t *testing.T) {
	g := NewWithT(t)
	c := drillSource(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Drills = nil })
	c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 5 * * *", Duration: "1h"}}
	Tend(c, t0)
	due := time.Date(2026, 12, 7, 3, 0, 5, 0, time.UTC)
	Tend(c, due)
	d := c.Status.Snapshots.Drills
	g.Expect(DrillPending(&c.Status)).To(BeTrue())
	g.Expect(d.WaitingFor).To(Equal("outside every maintenance window (spec.upgrade.windows): the drill starts when the next opens at 2026-12-07T05:00:00Z"))
	g.Expect(DrillWake(&c.Status, due)).To(Equal(5*time.Minute), "it looks again within five minutes")
	Tend(c, time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	g.Expect(d.WaitingFor).To(BeEmpty(), "inside the window it may start")
	g.Expect(DrillPending(&c.Status)).To(BeTrue())
}

func ptrInt32(v int32) *int32 { return &v }
