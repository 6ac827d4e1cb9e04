package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/schedule"
)

// Event reasons of scheduled and requested snapshots.
const (
	// EventRunFailed: a scheduled or requested snapshot failed after its attempts.
	EventRunFailed baov1.Reason = "SnapshotFailed"
	// EventPruned: retention deleted old snapshot objects.
	EventPruned baov1.Reason = "SnapshotsPruned"
	// EventPruneFailed: the bucket could not be listed, or refused a deletion.
	EventPruneFailed baov1.Reason = "SnapshotPruneFailed"
)

// MaxTaken is how many receipts status.snapshots.taken keeps.
const MaxTaken = 10

// RunAttempts is how many Jobs a run's snapshot may take before it fails.
const RunAttempts = operation.DefaultMaxJobAttempts

// Tend keeps status.snapshots in step with the spec and the clock, before the pass
// chooses its operation: it computes the next scheduled time when the schedule
// changed, marks a scheduled snapshot due when its time came (a due one waits for
// the operation lock and is taken once, however many times were missed), and says
// what a due snapshot waits for. Pure: it changes c.Status only.
func Tend(c *baov1.OpenBaoCluster, now time.Time) {
	spec := c.Spec.Snapshots
	key := schedule.Key(spec.Schedule, spec.TimeZone)
	st := &c.Status
	if st.Snapshots == nil {
		if key == "" && spec.Verify == nil {
			return
		}
		st.Snapshots = &baov1.SnapshotsStatus{}
	}
	ss := st.Snapshots
	tendSchedule(spec.Schedule, spec.TimeZone, &ss.Schedule, &ss.NextScheduledAt, &ss.Due, now)
	ss.WaitingFor = waitingFor(st)
	tendDrills(c, now)
}

// tendSchedule keeps one schedule's bookkeeping: the next time is computed again
// when the schedule (or its time zone) changed, from now; once it came, the time is
// due (one due time however many were missed) and the next is computed.
func tendSchedule(expr, tz string, recorded *string, next, due **metav1.Time, now time.Time) {
	key := schedule.Key(expr, tz)
	if key == "" {
		*recorded, *next, *due = "", nil, nil
		return
	}
	sched, err := schedule.Parse(expr, tz)
	if err != nil {
		return
	}
	switch {
	case *recorded != key || *next == nil:
		*recorded = key
		*next = ptrTime(sched.Next(now))
	case !now.Before((*next).Time):
		if *due == nil {
			*due = (*next).DeepCopy()
		}
		*next = ptrTime(sched.Next(now))
	}
}

func waitingFor(st *baov1.OpenBaoClusterStatus) string {
	ss := st.Snapshots
	if ss.Current != nil || (ss.Due == nil && ss.Requested == "") {
		return ""
	}
	what := "the requested snapshot (" + baov1.AnnotationSnapshot + "=" + ss.Requested + ")"
	if ss.Requested == "" {
		what = "the scheduled snapshot due at " + ss.Due.UTC().Format(time.RFC3339)
	}
	switch {
	case st.BreakGlass != nil && st.BreakGlass.Active:
		return what + " waits until break-glass is acknowledged"
	case st.OperationLock != nil && st.OperationLock.Operation != operation.OperationSnapshot:
		return fmt.Sprintf("%s waits for operation %s (%s) to release the cluster", what, st.OperationLock.Operation, st.OperationLock.Message)
	}
	return what + " starts now"
}

// Pending reports whether a snapshot is due or requested and none runs.
func Pending(st *baov1.OpenBaoClusterStatus) bool {
	ss := st.Snapshots
	return ss != nil && ss.Current == nil && (ss.Due != nil || ss.Requested != "")
}

// Running reports whether a scheduled or requested snapshot is in progress.
func Running(st *baov1.OpenBaoClusterStatus) bool {
	return st.Snapshots != nil && st.Snapshots.Current != nil
}

// Wake is how long until the next scheduled snapshot or restore drill; 0 without
// either.
func Wake(st *baov1.OpenBaoClusterStatus, now time.Time) time.Duration {
	wake := DrillWake(st, now)
	if st.Snapshots == nil || st.Snapshots.NextScheduledAt == nil {
		return wake
	}
	if w := max(st.Snapshots.NextScheduledAt.Sub(now), time.Second); wake == 0 || w < wake {
		wake = w
	}
	return wake
}

// Newest is the newest verified snapshot of any trigger: status.lastSnapshot (the
// last upgrade's) or the newest of status.snapshots.taken; nil when none
// (OpenBaoClusterStatus.NewestSnapshot, which the metrics read too).
func Newest(st *baov1.OpenBaoClusterStatus) *baov1.SnapshotReceipt { return st.NewestSnapshot() }

// Keep adds a verified snapshot's receipt to status.snapshots.taken, newest first,
// at most MaxTaken.
func Keep(st *baov1.OpenBaoClusterStatus, r *baov1.SnapshotReceipt) {
	if st.Snapshots == nil {
		st.Snapshots = &baov1.SnapshotsStatus{}
	}
	ss := st.Snapshots
	ss.Taken = append([]baov1.SnapshotReceipt{*r.DeepCopy()}, ss.Taken...)
	if len(ss.Taken) > MaxTaken {
		ss.Taken = ss.Taken[:MaxTaken]
	}
}

// RequestDecision is what the operator does with a new baokeeper.dev/snapshot
// value; the operator and kubectl bao both decide with it.
type RequestDecision struct {
	// Accept is true when a snapshot will be taken for it.
	Accept bool
	// Message is the event's text: what happens, or why nothing does.
	Message string
}

// DecideRequest decides a snapshot request: accepted (taken now, or queued behind
// the operation that holds the cluster, or behind break-glass), or refused when the
// cluster has no bucket.
func DecideRequest(c *baov1.OpenBaoCluster, value string) RequestDecision {
	if c.SnapshotTarget() == nil {
		return RequestDecision{Message: fmt.Sprintf("%s=%s refused: the cluster has no snapshot bucket; set spec.snapshots.s3 (or spec.upgrade.preUpgradeSnapshot.s3), "+
			"then request again with a new value; nothing was done", baov1.AnnotationSnapshot, value)}
	}
	msg := fmt.Sprintf("Taking a snapshot (%s=%s) into %s", baov1.AnnotationSnapshot, value, Location(c.SnapshotTarget().Bucket, Folder(c, c.SnapshotTarget())))
	st := &c.Status
	switch {
	case st.BreakGlass != nil && st.BreakGlass.Active:
		msg += "; queued until break-glass is acknowledged"
	case st.OperationLock != nil && st.OperationLock.Operation != operation.OperationSnapshot:
		msg += fmt.Sprintf("; queued after the operation in progress (%s: %s)", st.OperationLock.Operation, st.OperationLock.Message)
	case Running(st):
		msg += "; queued after the snapshot in progress"
	}
	return RequestDecision{Accept: true, Message: msg}
}

// Request records an accepted request in status: the next run takes it.
func Request(st *baov1.OpenBaoClusterStatus, value string) {
	if st.Snapshots == nil {
		st.Snapshots = &baov1.SnapshotsStatus{}
	}
	st.Snapshots.Requested = value
}

// RunOperation is a scheduled or requested snapshot: it takes the operation lock,
// streams and verifies a snapshot with an executor Job (as the pre-upgrade snapshot
// does), records its receipt, prunes the bucket when retention is set, and
// releases the lock. Every step's intent is in status.snapshots.current before its
// Job is created under a name derived from it, so a run resumes after a restart.
type RunOperation struct{}

// Name implements operation.Operation.
func (RunOperation) Name() string { return "Snapshot" }

// Decide implements operation.Operation.
func (RunOperation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	ss := st.Snapshots
	target := c.SnapshotTarget()
	persist := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	if ss == nil || (ss.Current == nil && !Pending(st)) {
		return operation.Nothing()
	}
	if ss.Current == nil {
		if target == nil {
			// The API server refuses a schedule without a bucket, and kubectl bao
			// and the operator refuse a request without one; the bucket was removed
			// since.
			msg := "no snapshot was taken: neither spec.snapshots.s3 nor spec.upgrade.preUpgradeSnapshot.s3 is set; set one, then request a snapshot again"
			ss.LastFailure = &baov1.SnapshotFailure{At: ptrTime(s.Now), Trigger: trigger(ss), Request: ss.Requested, Message: msg}
			ss.Due, ss.Requested, ss.WaitingFor = nil, "", ""
			return persist.Say(operation.Warning(EventRunFailed, msg))
		}
		run := &baov1.SnapshotRun{ID: operation.ID(c, "snapshot", s.Now), Trigger: trigger(ss), Request: ss.Requested,
			ScheduledFor: ss.Due, StartedAt: ptrTime(s.Now), Step: baov1.SnapshotRunTake}
		if err := operation.Acquire(st, operation.OperationSnapshot, operation.HolderUpgradeManager, describe(run), s.Now); err != nil {
			// choose starts a run only when the lock is free; it was taken since.
			ss.WaitingFor = waitingFor(st)
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: ss.WaitingFor}}
		}
		// One snapshot serves a request and a due schedule alike.
		ss.Current, ss.Due, ss.Requested, ss.WaitingFor = run, nil, "", ""
		persist.WaitingFor = "taking " + describe(run)
		return persist
	}
	run := ss.Current
	if target == nil {
		msg := "the snapshot stopped: spec.snapshots.s3 and spec.upgrade.preUpgradeSnapshot.s3 were removed while it ran; set one, then request a snapshot again"
		ss.LastFailure = &baov1.SnapshotFailure{At: ptrTime(s.Now), Trigger: run.Trigger, Request: run.Request, Message: msg}
		return finish(st, s.Now, persist, operation.Warning(EventRunFailed, msg), "")
	}
	version := st.CurrentVersion
	if run.Attempts == 0 {
		return startJob(c, st, target, run, version, s.ExecutorImage)
	}
	name := RunJobName(c, run)
	job := s.JobOf(name, run.ID)
	term := s.Jobs[name].Termination
	switch job.Phase {
	case operation.JobNone:
		// Not in the cache yet, or its creation was lost with the pass, or deleted:
		// create this attempt's Job (again). A create that finds it is a no-op.
		return createJob(c, st, target, run, version, s.ExecutorImage)
	case operation.JobRunning:
		return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll,
			WaitingFor: fmt.Sprintf("waiting for Job %s (%s)", name, strings.ToLower(string(run.Step)))}}
	}
	if run.Step == baov1.SnapshotRunPrune {
		return recordPrune(st, s.Now, persist, job, term)
	}
	if job.Phase == operation.JobFailed {
		msg := job.Message
		if term != "" {
			msg = fmt.Sprintf("%s (%s)", term, job.Message)
		}
		return retryRun(c, st, s.Now, target, run, version, s.ExecutorImage, persist, fmt.Sprintf("Job %s failed: %s", name, msg), job)
	}
	rec, err := ParseReceipt(term)
	if want := Location(target.Bucket, RunObjectKey(c, target, run, version)); err == nil && rec.Location != want {
		err = fmt.Errorf("the receipt names %s, not %s", rec.Location, want)
	}
	if err != nil {
		return retryRun(c, st, s.Now, target, run, version, s.ExecutorImage, persist, fmt.Sprintf("Job %s succeeded but its receipt is unusable: %v", name, err), job)
	}
	r := rec.Status(version)
	r.Trigger, r.Request = run.Trigger, run.Request
	// status.lastSnapshot stays the snapshot the last upgrade started from: the
	// restore runbook and a refused rollback name it as the way back to the version
	// before that upgrade, which a newer snapshot is not.
	Keep(st, r)
	run.Receipt = r.DeepCopy()
	taken := operation.Normal(EventTaken, fmt.Sprintf("%s of %s at Raft index %d verified: %s, %d bytes, sha256 %s",
		strings.ToUpper(describe(run)[:1])+describe(run)[1:], r.FromMember, r.RaftIndex, r.Location, r.SizeBytes, r.SHA256))
	if _, ok := RetentionOf(c.Spec.Snapshots.Retention); ok {
		run.Step, run.Attempts = baov1.SnapshotRunPrune, 0
		persist.WaitingFor = "pruning the bucket"
		return persist.Say(taken)
	}
	return finish(st, s.Now, persist, taken, "")
}

// startJob records the next attempt and creates its Job in the same pass: the Job's
// name carries the attempt, so a pass whose status write is lost finds the same Job.
func startJob(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, target *baov1.S3Target, run *baov1.SnapshotRun, version, image string) operation.Plan {
	run.Attempts++
	return createJob(c, st, target, run, version, image)
}

// createJob creates the Job of the run's current step and attempt.
func createJob(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, target *baov1.S3Target, run *baov1.SnapshotRun, version, image string) operation.Plan {
	ret, _ := RetentionOf(c.Spec.Snapshots.Retention)
	job := RunJob(c, target, run, version, ProtectedKeys(st, target.Bucket), ret, image)
	p := operation.Plan{Status: st, Job: job, Poll: Poll, Action: operation.Action{Kind: operation.KindCreateJob, Job: operation.JobSnapshot, RequeueAfter: Poll}}
	if run.Step == baov1.SnapshotRunPrune {
		p.Action.Job = operation.JobPrune
		p.JobEvent = &operation.Event{Reason: EventStarted, Message: fmt.Sprintf("Pruning %s with %s", Location(target.Bucket, Folder(c, target)), describeRetention(ret))}
		p.WaitingFor = "pruning the bucket"
		return p
	}
	p.JobEvent = &operation.Event{Reason: EventStarted, Message: fmt.Sprintf("Taking %s into %s, attempt %d of %d",
		describe(run), Location(target.Bucket, RunObjectKey(c, target, run, version)), run.Attempts, RunAttempts)}
	p.WaitingFor = fmt.Sprintf("taking %s (attempt %d of %d)", describe(run), run.Attempts, RunAttempts)
	return p
}

// retryRun starts the next attempt after RetryDelay, or ends the run as failed.
func retryRun(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, now time.Time, target *baov1.S3Target, run *baov1.SnapshotRun,
	version, image string, persist operation.Plan, why string, job operation.Job) operation.Plan {
	if run.Step == baov1.SnapshotRunPrune {
		return recordPrune(st, now, persist, operation.Job{Phase: operation.JobFailed, Message: why}, "")
	}
	if run.Attempts >= RunAttempts {
		msg := fmt.Sprintf("%s failed after %d attempts, last: %s. Check the snapshot Job's logs and the bucket (endpoint, bucket, credentials); "+
			"the next scheduled time tries again, or request one with kubectl bao snapshot", describe(run), run.Attempts, why)
		st.Snapshots.LastFailure = &baov1.SnapshotFailure{At: ptrTime(now), Trigger: run.Trigger, Request: run.Request, Message: msg}
		return finish(st, now, persist, operation.Warning(EventRunFailed, msg), "")
	}
	if wait := job.FinishedAt.Add(RetryDelay).Sub(now); !job.FinishedAt.IsZero() && wait > 0 {
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: wait,
			WaitingFor: fmt.Sprintf("%s; retrying in %s", why, wait.Round(time.Second))}}
	}
	return startJob(c, st, target, run, version, image)
}

// recordPrune records a finished prune Job; a failed pruning is reported, not
// retried (the next snapshot prunes again), and the snapshot stays taken.
func recordPrune(st *baov1.OpenBaoClusterStatus, now time.Time, persist operation.Plan, job operation.Job, term string) operation.Plan {
	rec := &baov1.PruneRecord{At: ptrTime(now)}
	var res PruneResult
	err := json.Unmarshal([]byte(strings.TrimSpace(term)), &res)
	switch {
	case job.Phase == operation.JobSucceeded && err == nil:
		rec.Listed, rec.Deleted, rec.Kept, rec.Failed = int32(res.Listed), int32(len(res.Deleted)), int32(res.Kept), res.Failed
	case job.Phase == operation.JobSucceeded:
		rec.Failed = fmt.Sprintf("the prune Job left no result (%v); check its logs", err)
	default:
		rec.Failed = fmt.Sprintf("the prune Job failed, nothing is known to be deleted: %s. Check its logs and the bucket's permissions (list, delete)", job.Message)
		if term != "" {
			rec.Failed = fmt.Sprintf("the prune Job failed: %s (%s). Check its logs and the bucket's permissions (list, delete)", term, job.Message)
		}
	}
	st.Snapshots.LastPrune = rec
	ev := operation.Normal(EventPruned, fmt.Sprintf("Pruned %d of %d snapshot objects, kept %d", rec.Deleted, rec.Listed, rec.Kept))
	if rec.Failed != "" {
		ev = operation.Warning(EventPruneFailed, fmt.Sprintf("Pruning stopped after %d deletions: %s", rec.Deleted, rec.Failed))
	}
	return finish(st, now, persist, ev, "")
}

// finish ends the run and releases the lock, in one status write.
func finish(st *baov1.OpenBaoClusterStatus, _ time.Time, persist operation.Plan, ev operation.Event, waiting string) operation.Plan {
	st.Snapshots.Current = nil
	st.Snapshots.WaitingFor = waiting
	operation.Release(st, operation.OperationSnapshot)
	persist.Status = st
	return persist.Say(ev)
}

func trigger(ss *baov1.SnapshotsStatus) baov1.SnapshotTrigger {
	if ss.Requested != "" {
		return baov1.SnapshotRequested
	}
	return baov1.SnapshotScheduled
}

// describe names a run in a phrase: "the requested snapshot (baokeeper.dev/snapshot=X)"
// or "the scheduled snapshot of 2026-12-06T12:00:00Z".
func describe(run *baov1.SnapshotRun) string {
	if run.Trigger == baov1.SnapshotRequested {
		return fmt.Sprintf("the requested snapshot (%s=%s)", baov1.AnnotationSnapshot, run.Request)
	}
	if run.ScheduledFor != nil {
		return "the scheduled snapshot of " + run.ScheduledFor.UTC().Format(time.RFC3339)
	}
	return "the scheduled snapshot"
}

func describeRetention(r Retention) string {
	var parts []string
	if r.Count > 0 {
		parts = append(parts, fmt.Sprintf("count %d", r.Count))
	}
	if r.MaxAge > 0 {
		parts = append(parts, "maxAge "+r.MaxAge.String())
	}
	return "retention " + strings.Join(parts, " and ")
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
