package snapshot

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// StepTakeSnapshot is status.upgrade.currentStep.action while the snapshot is taken.
const StepTakeSnapshot = baov1.StepTakeSnapshot

// ReasonSnapshotFailed is the failure reason when no attempt produced a verified
// snapshot.
const ReasonSnapshotFailed = baov1.FailureSnapshotFailed

// RetryDelay is the pause between a failed attempt and the next.
const RetryDelay = 10 * time.Second

// Action is what the caller must do after a decision.
type Action string

// Actions.
const (
	// ActionDone: no snapshot is needed, or its receipt is recorded; go on.
	ActionDone Action = "Done"
	// ActionReuse records status.lastSnapshot as this upgrade's snapshot (IfOlderThan).
	ActionReuse Action = "Reuse"
	// ActionHold waits at the safe point before the snapshot (spec.upgrade.paused).
	ActionHold Action = "Hold"
	// ActionBegin persists the intent to take a snapshot (status only).
	ActionBegin Action = "Begin"
	// ActionStartJob creates the Job of the next attempt.
	ActionStartJob Action = "StartJob"
	// ActionRecord records the receipt of a succeeded Job.
	ActionRecord Action = "Record"
	// ActionFail stops the upgrade before any member was touched.
	ActionFail Action = "Fail"
	// ActionWait waits for the Job or for the retry delay.
	ActionWait Action = "Wait"
)

// Input is everything Decide needs. It holds no client and performs no I/O.
type Input struct {
	Spec    baov1.PreUpgradeSnapshotSpec
	Upgrade *baov1.UpgradeStatus
	// Last is the newest verified snapshot (Newest): the last upgrade's, or a
	// scheduled or requested one taken since.
	Last   *baov1.SnapshotReceipt
	Now    time.Time
	Paused bool
	// PauseReason says why it holds when Paused; "" says spec.upgrade.paused.
	PauseReason string
	// Job is the current attempt's Job (JobNone before the first or when gone).
	Job operation.Job
	// JobName is the current attempt's Job name, for messages.
	JobName string
	// Receipt is parsed from a succeeded Job's termination message; ReceiptErr says
	// why it could not be. WantLocation is where the current attempt writes.
	Receipt      *Receipt
	ReceiptErr   error
	WantLocation string
}

// Decision is what to do next and why.
type Decision struct {
	Action     Action
	WaitingFor string
	// Receipt is what ActionRecord and ActionReuse record.
	Receipt *baov1.SnapshotReceipt
	// Reason and Message describe a failure (ActionFail).
	Reason  baov1.FailureReason
	Message string
	// RequeueAfter is set when the next event is a timer.
	RequeueAfter time.Duration
}

// Needed reports whether an upgrade still has to pass through the snapshot phase
// before any member changes.
func Needed(spec baov1.PreUpgradeSnapshotSpec, up *baov1.UpgradeStatus) bool {
	return spec.Policy != baov1.SnapshotNever && up.Kind != baov1.OperationRollout && up.Snapshot == nil && len(up.CompletedPods) == 0 &&
		(up.CurrentStep == nil || up.CurrentStep.Action == StepTakeSnapshot)
}

// Decide returns the single next action of the snapshot phase. Like the rolling
// machine it is idempotent: an attempt whose Job exists is observed, never started
// twice.
func Decide(in Input) Decision {
	up := in.Upgrade
	if !Needed(in.Spec, up) {
		return Decision{Action: ActionDone}
	}
	if up.Failure != nil {
		return Decision{Action: ActionWait,
			WaitingFor: fmt.Sprintf("upgrade failed (%s): fix the cause, then set the baokeeper.dev/retry annotation to a new value", up.Failure.Reason)}
	}
	step := up.CurrentStep
	if in.Spec.S3 == nil {
		// The prechecks refused a start without a target; it was removed since.
		msg := "spec.upgrade.preUpgradeSnapshot.s3 was removed while the snapshot was pending; no member was touched. " +
			"Set it again (or set policy: Never), then set the baokeeper.dev/retry annotation"
		return Decision{Action: ActionFail, Reason: ReasonSnapshotFailed, Message: msg, WaitingFor: "upgrade failed: " + msg}
	}
	if step == nil {
		if r := reusable(in); r != nil {
			return Decision{Action: ActionReuse, Receipt: r,
				WaitingFor: fmt.Sprintf("reusing the snapshot %s taken at %s (younger than maxAge %s)",
					r.Location, r.TakenAt.UTC().Format(time.RFC3339), string(*in.Spec.MaxAge))}
		}
		if in.Paused {
			if in.PauseReason != "" && in.PauseReason != "paused by spec.upgrade.paused" {
				return Decision{Action: ActionHold, WaitingFor: in.PauseReason + "; holding before the pre-upgrade snapshot; no member was touched"}
			}
			return Decision{Action: ActionHold, WaitingFor: "paused by spec.upgrade.paused before the pre-upgrade snapshot; no member was touched"}
		}
		return Decision{Action: ActionBegin, WaitingFor: "taking the pre-upgrade snapshot"}
	}

	attempt := fmt.Sprintf("attempt %d of %d", step.Attempts, operation.MaxAttempts(step))
	switch in.Job.Phase {
	case operation.JobNone:
		if operation.AttemptsExhausted(step) {
			return fail(step, "no snapshot Job left to observe")
		}
		return Decision{Action: ActionStartJob,
			WaitingFor: fmt.Sprintf("starting the pre-upgrade snapshot Job (attempt %d of %d)", step.Attempts+1, operation.MaxAttempts(step))}
	case operation.JobRunning:
		return Decision{Action: ActionWait,
			WaitingFor: fmt.Sprintf("waiting for the pre-upgrade snapshot Job %s to stream the snapshot to %s (%s)", in.JobName, in.WantLocation, attempt)}
	case operation.JobSucceeded:
		err := in.ReceiptErr
		if err == nil && in.Receipt == nil {
			err = fmt.Errorf("the Job left no receipt")
		}
		if err == nil && in.Receipt.Location != in.WantLocation {
			err = fmt.Errorf("the receipt names %s, not %s", in.Receipt.Location, in.WantLocation)
		}
		if err == nil {
			r := in.Receipt.Status(up.FromVersion)
			r.Trigger = baov1.SnapshotPreUpgrade
			return Decision{Action: ActionRecord, Receipt: r,
				WaitingFor: fmt.Sprintf("snapshot at Raft index %d verified at %s (%d bytes, sha256 %s)", r.RaftIndex, r.Location, r.SizeBytes, short(r.SHA256))}
		}
		return retry(in, step, fmt.Sprintf("Job %s succeeded but its receipt is unusable: %v", in.JobName, err))
	default:
		return retry(in, step, fmt.Sprintf("Job %s failed: %s", in.JobName, in.Job.Message))
	}
}

func retry(in Input, step *baov1.UpgradeStep, why string) Decision {
	if operation.AttemptsExhausted(step) {
		return fail(step, why)
	}
	if wait := in.Job.FinishedAt.Add(RetryDelay).Sub(in.Now); wait > 0 {
		return Decision{Action: ActionWait, RequeueAfter: wait,
			WaitingFor: fmt.Sprintf("%s; retrying the snapshot in %s", why, wait.Round(time.Second))}
	}
	return Decision{Action: ActionStartJob,
		WaitingFor: fmt.Sprintf("%s; starting attempt %d of %d", why, step.Attempts+1, operation.MaxAttempts(step))}
}

func fail(step *baov1.UpgradeStep, why string) Decision {
	msg := fmt.Sprintf("the pre-upgrade snapshot failed after %d attempts, last: %s; no member was touched. "+
		"Check the snapshot Job's logs and spec.upgrade.preUpgradeSnapshot.s3 (endpoint, bucket, credentials), then set the baokeeper.dev/retry annotation",
		step.Attempts, why)
	return Decision{Action: ActionFail, Reason: ReasonSnapshotFailed, Message: msg, WaitingFor: "upgrade failed: " + msg}
}

// reusable returns status.lastSnapshot when policy IfOlderThan allows reusing it:
// younger than maxAge and in the configured bucket and prefix.
func reusable(in Input) *baov1.SnapshotReceipt {
	l := in.Last
	if in.Spec.Policy != baov1.SnapshotIfOlderThan || in.Spec.MaxAge == nil || l == nil || l.TakenAt == nil || in.Spec.S3 == nil {
		return nil
	}
	maxAge, err := in.Spec.MaxAge.Parse()
	if err != nil || in.Now.Sub(l.TakenAt.Time) >= maxAge {
		return nil
	}
	want := Location(in.Spec.S3.Bucket, strings.Trim(in.Spec.S3.Prefix, "/"))
	if !strings.HasPrefix(l.Location, want) {
		return nil
	}
	return l.DeepCopy()
}

// Record writes a decision into the cluster status, in memory, before the caller
// acts on it.
func Record(st *baov1.OpenBaoClusterStatus, d Decision, now time.Time) {
	up := st.Upgrade
	t := metav1.NewTime(now)
	switch d.Action {
	case ActionDone:
		return
	case ActionBegin:
		up.CurrentStep = &baov1.UpgradeStep{Action: StepTakeSnapshot, StartedAt: &t}
	case ActionStartJob:
		up.CurrentStep.Attempts++
	case ActionReuse:
		// The reused snapshot is this upgrade's way back, as a fresh one would be.
		up.Snapshot = d.Receipt
		st.LastSnapshot = d.Receipt.DeepCopy()
		up.CurrentStep = nil
	case ActionRecord:
		// The upgrade's receipt and the cluster's last snapshot go out in the same
		// status write.
		up.Snapshot = d.Receipt
		st.LastSnapshot = d.Receipt.DeepCopy()
		Keep(st, d.Receipt)
		up.CurrentStep = nil
	case ActionFail:
		up.Failure = &baov1.UpgradeFailure{Reason: d.Reason, Message: d.Message, At: &t}
	}
	up.WaitingFor = d.WaitingFor
	if up.CurrentStep != nil && d.Action != ActionFail && up.Failure == nil {
		up.CurrentStep.WaitingFor = d.WaitingFor
	}
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	return sum
}
