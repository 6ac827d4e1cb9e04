package snapshot

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Event reasons of restore drills.
const (
	EventDrillStarted baov1.Reason = "RestoreDrillStarted"
	EventDrillPassed  baov1.Reason = "RestoreDrillPassed"
	EventDrillFailed  baov1.Reason = "RestoreDrillFailed"
	EventDrillSkipped baov1.Reason = "RestoreDrillSkipped"
)

// Labels of a drill cluster.
const (
	// LabelDrillOf names the cluster a drill cluster verifies a snapshot of.
	LabelDrillOf = "baokeeper.dev/drill-of"
	// LabelDrillID is the drill's ID.
	LabelDrillID = "baokeeper.dev/drill-id"
)

// tendDrills keeps the drill schedule's bookkeeping (spec.snapshots.verify), as
// Tend does for snapshots.
func tendDrills(c *baov1.OpenBaoCluster, now time.Time) {
	ss := c.Status.Snapshots
	v := c.Spec.Snapshots.Verify
	if v == nil && ss.Drills == nil {
		return
	}
	if ss.Drills == nil {
		ss.Drills = &baov1.DrillsStatus{}
	}
	d := ss.Drills
	expr := ""
	if v != nil {
		expr = v.Schedule
	}
	tendSchedule(expr, c.Spec.Snapshots.TimeZone, &d.Schedule, &d.NextScheduledAt, &d.Due, now)
	d.WaitingFor = ""
	if d.Due != nil && d.Current == nil {
		d.WaitingFor = DrillWindowHold(c, now)
	}
}

// DrillWindowHold says why a due drill waits for a maintenance window: a scheduled
// drill is not urgent, so with spec.upgrade.windows it starts only inside one; ""
// when it may start.
func DrillWindowHold(c *baov1.OpenBaoCluster, now time.Time) string {
	st, ok := fleet.Windows(c, now)
	if !ok || st.Open {
		return ""
	}
	if st.OpensAt.IsZero() {
		return "outside every maintenance window (spec.upgrade.windows), and none opens"
	}
	return fmt.Sprintf("outside every maintenance window (spec.upgrade.windows): the drill starts when the next opens at %s", st.OpensAt.UTC().Format(time.RFC3339))
}

// DrillPending reports whether a drill is due and none runs.
func DrillPending(st *baov1.OpenBaoClusterStatus) bool {
	d := drills(st)
	return d != nil && d.Current == nil && d.Due != nil
}

// DrillRunning reports whether a drill is in progress.
func DrillRunning(st *baov1.OpenBaoClusterStatus) bool {
	d := drills(st)
	return d != nil && d.Current != nil
}

// DrillWake is how long until the next scheduled drill; 0 without one. A due
// drill that waits for a window looks again within five minutes.
func DrillWake(st *baov1.OpenBaoClusterStatus, now time.Time) time.Duration {
	d := drills(st)
	if d == nil || d.NextScheduledAt == nil {
		return 0
	}
	wake := max(d.NextScheduledAt.Sub(now), time.Second)
	if d.WaitingFor != "" {
		wake = min(wake, 5*time.Minute)
	}
	return wake
}

func drills(st *baov1.OpenBaoClusterStatus) *baov1.DrillsStatus {
	if st.Snapshots == nil {
		return nil
	}
	return st.Snapshots.Drills
}

// DrillClusterName is the drill cluster's name: <name>-drill, or a shortened name
// with a hash when that would be longer than a cluster name may be (40).
func DrillClusterName(c *baov1.OpenBaoCluster) string {
	if n := c.Name + "-drill"; len(n) <= 40 {
		return n
	}
	return executorjob.BoundedNameN(c.Name+"-drill", 40)
}

// DrillOperation is a restore drill: with the operation lock, a one-member cluster
// (<name>-drill, owned by this one) is created that starts from the newest verified
// snapshot; its restore is the check (the object's SHA-256, the restore, the
// restart, the rebind to its own identity, the controller's read at or past the
// snapshot's Raft index); then it is deleted with its volume and seal key, and the
// verdict is recorded. Every step is in status.snapshots.drills.current before it
// is taken. A drill due while the cluster is degraded is skipped, and said.
type DrillOperation struct{}

// Name implements operation.Operation.
func (DrillOperation) Name() string { return "RestoreDrill" }

// Decide implements operation.Operation.
func (DrillOperation) Decide(s *operation.Snapshot) operation.Plan {
	st := s.Status()
	d := drills(st)
	if d == nil || (d.Current == nil && d.Due == nil) {
		return operation.Nothing()
	}
	persist := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	if d.Current == nil {
		return startDrill(s, st, d, persist)
	}
	run := d.Current
	wait := func(what string) operation.Plan {
		return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: what}}
	}
	switch run.Step {
	case baov1.DrillStepCreate:
		switch {
		case s.Drill == nil:
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindApply, Object: operation.ObjectDrillCluster,
				WaitingFor: "creating drill cluster " + run.Cluster}}
		case s.Drill.Labels[LabelDrillID] != run.ID:
			// Left by a drill whose end was lost (the operator stopped between the
			// deletion and its record): deleted before this drill's is created.
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectDrillCluster,
				WaitingFor: "deleting drill cluster " + s.Drill.Name + " of an earlier drill"}}
		}
		run.Step = baov1.DrillStepRestore
		return persist
	case baov1.DrillStepRestore:
		if r := verdict(s, run); r != nil {
			run.Result, run.Step = r, baov1.DrillStepDelete
			return persist
		}
		what := "drill cluster " + run.Cluster + " is being created"
		if s.Drill != nil && s.Drill.Status.Restore != nil {
			what = fmt.Sprintf("drill cluster %s restores %s: step %s, %s", run.Cluster, run.Snapshot, s.Drill.Status.Restore.Step, s.Drill.Status.Restore.WaitingFor)
		}
		return wait(what)
	case baov1.DrillStepDelete:
		if s.Drill != nil {
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectDrillCluster,
				WaitingFor: "deleting drill cluster " + run.Cluster + " and its volume"}}
		}
		return finishDrill(st, d, s.Now, persist)
	}
	return operation.Nothing()
}

// startDrill starts a due drill, or skips it (and says why) when the cluster is
// degraded or has no verified snapshot.
func startDrill(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, d *baov1.DrillsStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	skip := func(why string) operation.Plan {
		d.Last = &baov1.DrillResult{Outcome: baov1.DrillSkipped, StartedAt: ptrTime(s.Now), FinishedAt: ptrTime(s.Now),
			Message: "skipped: " + why + "; the next scheduled time tries again"}
		d.Due = nil
		return persist.Say(operation.Warning(EventDrillSkipped, "Restore drill "+d.Last.Message))
	}
	if why := degraded(s); why != "" {
		return skip("the cluster is degraded (" + why + "), and a drill adds load to its bucket and its nodes")
	}
	newest := Newest(st)
	if newest == nil || newest.SHA256 == "" {
		return skip("the cluster has no verified snapshot to restore (take one with kubectl bao snapshot " + c.Name + " --wait, or set spec.snapshots.schedule)")
	}
	if _, _, err := TargetFor(c, newest.Location); err != nil {
		return skip(err.Error())
	}
	run := &baov1.DrillRun{ID: operation.ID(c, "drill", s.Now), Cluster: DrillClusterName(c), Snapshot: newest.Location, SHA256: newest.SHA256,
		ScheduledFor: d.Due, StartedAt: ptrTime(s.Now), Step: baov1.DrillStepCreate}
	if err := operation.Acquire(st, operation.OperationDrill, operation.HolderUpgradeManager, "restore drill of "+run.Snapshot, s.Now); err != nil {
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: "the restore drill waits: " + err.Error()}}
	}
	d.Current, d.Due = run, nil
	return persist.Say(operation.Normal(EventDrillStarted, fmt.Sprintf("Restore drill: restoring %s (sha256 %s) into %s", run.Snapshot, run.SHA256, run.Cluster)))
}

// degraded says why the cluster cannot spare a drill: a member not Ready, or Raft
// not healthy as autopilot reports it; "" when it can.
func degraded(s *operation.Snapshot) string {
	var down []string
	for _, m := range s.Members {
		if !m.PodReady || m.Sealed {
			down = append(down, m.Name)
		}
	}
	switch {
	case len(down) > 0:
		return "not Ready: " + strings.Join(down, ", ")
	case !s.AutopilotKnown:
		return "autopilot state unreadable"
	case !s.AutopilotHealthy:
		return "autopilot reports it unhealthy"
	}
	return ""
}

// verdict is the drill's result once the drill cluster's restore ended or the
// drill timed out; nil while it runs.
func verdict(s *operation.Snapshot, run *baov1.DrillRun) *baov1.DrillResult {
	c := s.Object
	res := &baov1.DrillResult{ID: run.ID, Cluster: run.Cluster, Snapshot: run.Snapshot, StartedAt: run.StartedAt, FinishedAt: ptrTime(s.Now)}
	took := ""
	if run.StartedAt != nil {
		took = s.Now.Sub(run.StartedAt.Time).Round(time.Second).String()
	}
	var r *baov1.RestoreStatus
	if s.Drill != nil {
		r = s.Drill.Status.Restore
	}
	switch {
	case s.Drill == nil:
		res.Outcome, res.Message = baov1.DrillFailed, fmt.Sprintf("drill cluster %s is gone before its restore ended (deleted by hand?)", run.Cluster)
	case r != nil && r.Step == baov1.RestoreStepDone:
		res.Outcome, res.RaftIndex = baov1.DrillPassed, r.RaftIndex
		res.Message = fmt.Sprintf("%s restored into %s in %s: SHA-256 checked, member restarted and unsealed, roles rewritten, read with the controller's role at Raft index %d%s",
			run.Snapshot, run.Cluster, took, r.RaftIndex, canaryWords(r.Canary))
	case r != nil && r.Step == baov1.RestoreStepFailed:
		res.Outcome, res.Message = baov1.DrillFailed, r.Failure
	case run.StartedAt != nil && s.Now.Sub(run.StartedAt.Time) > c.DrillTimeout():
		what := "it was not created"
		if r != nil {
			what = fmt.Sprintf("its restore is at step %s: %s", r.Step, r.WaitingFor)
		} else if s.Drill != nil {
			what = "its restore did not start: " + s.Drill.Status.Message
		}
		res.Outcome, res.Message = baov1.DrillFailed, fmt.Sprintf("drill cluster %s did not restore %s within %s (spec.snapshots.verify.timeout): %s", run.Cluster, run.Snapshot, c.DrillTimeout(), what)
	default:
		return nil
	}
	return res
}

// finishDrill records the verdict once the drill cluster is gone, and releases the
// lock, in one status write.
func finishDrill(st *baov1.OpenBaoClusterStatus, d *baov1.DrillsStatus, now time.Time, persist operation.Plan) operation.Plan {
	run := d.Current
	res := run.Result
	if res == nil {
		res = &baov1.DrillResult{ID: run.ID, Cluster: run.Cluster, Snapshot: run.Snapshot, StartedAt: run.StartedAt, FinishedAt: ptrTime(now),
			Outcome: baov1.DrillFailed, Message: "the drill ended without a verdict"}
	}
	d.Last, d.Current = res, nil
	operation.Release(st, operation.OperationDrill)
	if res.Outcome == baov1.DrillPassed {
		d.LastPassedAt = res.FinishedAt
		return persist.Say(operation.Normal(EventDrillPassed, "Restore drill passed: "+res.Message))
	}
	return persist.Say(operation.Warning(EventDrillFailed, fmt.Sprintf("Restore drill of %s failed: %s. See docs/runbooks/BaokeeperRestoreDrillFailed.md", res.Snapshot, res.Message)))
}

// TargetFor is the cluster's bucket that holds location (s3://BUCKET/KEY) and the
// object's key: spec.snapshots.s3 or spec.upgrade.preUpgradeSnapshot.s3, whichever
// names the bucket, with its prefix cleared (the key is whole).
func TargetFor(c *baov1.OpenBaoCluster, location string) (*baov1.S3Target, string, error) {
	bucket, key, ok := splitLocation(location)
	if !ok {
		return nil, "", fmt.Errorf("the receipt's location %q is not s3://BUCKET/KEY", location)
	}
	for _, t := range []*baov1.S3Target{c.Spec.Snapshots.S3, c.Spec.Upgrade.PreUpgradeSnapshot.S3} {
		if t != nil && t.Bucket == bucket {
			out := t.DeepCopy()
			out.Prefix = ""
			return out, key, nil
		}
	}
	return nil, "", fmt.Errorf("the snapshot is in bucket %s, which neither spec.snapshots.s3 nor spec.upgrade.preUpgradeSnapshot.s3 of %s/%s names any more",
		bucket, c.Namespace, c.Name)
}

// DrillCluster is the drill cluster of the drill in progress: the cluster's spec
// with one member, no snapshots of its own, and spec.bootstrap.fromSnapshot naming
// the drill's snapshot and this cluster as its source (its seal key, its identity).
// It is owned by the cluster (deleting the cluster deletes it) and labelled with the
// drill.
func DrillCluster(c *baov1.OpenBaoCluster) (*baov1.OpenBaoCluster, error) {
	run := drills(&c.Status).Current
	if run == nil {
		return nil, fmt.Errorf("no restore drill runs on %s/%s", c.Namespace, c.Name)
	}
	target, key, err := TargetFor(c, run.Snapshot)
	if err != nil {
		return nil, err
	}
	one := int32(1)
	d := &baov1.OpenBaoCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: baov1.GroupVersion.String(), Kind: "OpenBaoCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: run.Cluster, Namespace: c.Namespace,
			Labels:          map[string]string{LabelDrillOf: c.Name, LabelDrillID: run.ID},
			Annotations:     map[string]string{"baokeeper.dev/note": "Restore drill of " + c.Name + ": deleted by baokeeper when the drill ends."},
			OwnerReferences: []metav1.OwnerReference{workload.OwnerReference(c)}},
		Spec: *c.Spec.DeepCopy(),
	}
	d.Spec.Replicas = &one
	d.Spec.Snapshots = baov1.SnapshotsSpec{}
	d.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever}
	if cur := c.Status.CurrentVersion; cur != "" && cur != strings.TrimPrefix(c.Spec.Version, "v") {
		// The version the members run, not one an upgrade has yet to reach.
		d.Spec.Version, d.Spec.Image = cur, ""
	}
	src := baov1.SnapshotSource{S3: *target, Key: key, SHA256: run.SHA256, SourceCluster: c.Name, Canary: canaryOf(&c.Status, run.SHA256)}
	if c.GetSealType() == baov1.StaticSeal {
		src.SealKeySecretRef = &corev1.LocalObjectReference{Name: workload.NamesFor(c).SealSecret()}
	}
	d.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: src}
	return d, nil
}
