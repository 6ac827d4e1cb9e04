package snapshot

import (
	"fmt"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Event reasons of the pre-upgrade snapshot.
const (
	EventStarted baov1.Reason = "SnapshotStarted"
	EventTaken   baov1.Reason = "SnapshotTaken"
	EventReused  baov1.Reason = "SnapshotReused"
	// EventFailed is the upgrade's failure: the snapshot is its first step.
	EventFailed baov1.Reason = "UpgradeFailed"
)

// Poll is how soon the snapshot phase looks again while its Job runs (Job changes
// are watched; the timer covers the retry delay and a pause).
const Poll = 2 * time.Second

// persistRequeue is how soon a pass that only recorded an intent runs again.
const persistRequeue = 200 * time.Millisecond

// Operation is the pre-upgrade snapshot phase of an upgrade: nothing of the cluster
// changes, not even the pod template, before its receipt is recorded.
type Operation struct{}

// Name implements operation.Operation.
func (Operation) Name() string { return "PreUpgradeSnapshot" }

// Decide implements operation.Operation.
func (Operation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	up := st.Upgrade
	spec := c.Spec.Upgrade.PreUpgradeSnapshot
	in := Input{Spec: spec, Upgrade: up, Last: Newest(st), Now: s.Now, PauseReason: fleet.Hold(s, up)}
	in.Paused = in.PauseReason != ""
	if step := up.CurrentStep; step != nil && step.Attempts > 0 && spec.S3 != nil {
		in.JobName = JobName(c, up, step.Attempts)
		in.WantLocation = Location(spec.S3.Bucket, ObjectKey(c, up, step.Attempts))
		in.Job = s.JobOf(in.JobName, "")
		term := s.Jobs[in.JobName].Termination
		switch {
		case in.Job.Phase == operation.JobFailed && term != "":
			in.Job.Message = fmt.Sprintf("%s (%s)", term, in.Job.Message)
		case in.Job.Phase == operation.JobSucceeded:
			in.Receipt, in.ReceiptErr = ParseReceipt(term)
		}
	}
	d := Decide(in)
	Record(st, d, s.Now)
	p := operation.Plan{Status: st, Poll: Poll, Action: operation.Action{WaitingFor: d.WaitingFor, Reason: d.Reason, Message: d.Message,
		Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	switch d.Action {
	case ActionBegin:
	case ActionStartJob:
		attempt := up.CurrentStep.Attempts
		p.Kind, p.Job, p.RequeueAfter = operation.KindCreateJob, Job(c, up, attempt, s.ExecutorImage), Poll
		p.Action.Job = operation.JobSnapshot
		p.JobEvent = &operation.Event{Reason: EventStarted, Message: fmt.Sprintf("Taking the pre-upgrade snapshot into %s, attempt %d of %d",
			Location(spec.S3.Bucket, ObjectKey(c, up, attempt)), attempt, operation.MaxAttempts(up.CurrentStep))}
	case ActionRecord:
		p.Events = append(p.Events, operation.Normal(EventTaken, fmt.Sprintf("Pre-upgrade snapshot of %s at Raft index %d verified: %s, %d bytes, sha256 %s",
			d.Receipt.FromMember, d.Receipt.RaftIndex, d.Receipt.Location, d.Receipt.SizeBytes, d.Receipt.SHA256)))
	case ActionReuse:
		p.Events = append(p.Events, operation.Normal(EventReused, d.WaitingFor))
	case ActionFail:
		p.Kind, p.RequeueAfter = operation.KindFail, 0
		p.Events = append(p.Events, operation.Warning(EventFailed, d.Message))
	default:
		p.Kind, p.RequeueAfter = operation.KindWait, d.RequeueAfter
		if up.Failure != nil {
			p.Kind, p.RequeueAfter = operation.KindNone, 0
		}
	}
	return p
}
