package kubectlbao

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/control"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
)

// Control is a manual control that kubectl bao writes.
type Control string

// The controls, named as their commands.
const (
	// ControlPromote writes baokeeper.dev/promote.
	ControlPromote Control = "promote"
	// ControlRollback writes baokeeper.dev/rollback.
	ControlRollback Control = "rollback"
	// ControlRetry writes baokeeper.dev/retry.
	ControlRetry Control = "retry"
	// ControlPause sets spec.upgrade.paused to true.
	ControlPause Control = "pause"
	// ControlResume sets spec.upgrade.paused to false.
	ControlResume Control = "resume"
	// ControlBreakGlassAck writes baokeeper.dev/break-glass-ack with the nonce.
	ControlBreakGlassAck Control = "break-glass ack"
	// ControlRestart writes baokeeper.dev/restart.
	ControlRestart Control = "restart"
	// ControlSnapshot writes baokeeper.dev/snapshot.
	ControlSnapshot Control = "snapshot"
	// ControlRestore writes baokeeper.dev/restore (restore --in-place).
	ControlRestore Control = "restore --in-place"
	// ControlRehearse writes baokeeper.dev/rehearse (rehearse --to VERSION).
	ControlRehearse Control = "rehearse"
	// ControlRecoverQuorum writes baokeeper.dev/recover-quorum=MEMBER:NONCE
	// (recover-quorum --from MEMBER --nonce NONCE).
	ControlRecoverQuorum Control = "recover-quorum"
)

// Field is the field a control writes, as a person would name it.
func (ctl Control) Field() string {
	switch ctl {
	case ControlPromote:
		return "metadata.annotations[" + baov1.AnnotationPromote + "]"
	case ControlRollback:
		return "metadata.annotations[" + baov1.AnnotationRollback + "]"
	case ControlRetry:
		return "metadata.annotations[" + baov1.AnnotationRetry + "]"
	case ControlBreakGlassAck:
		return "metadata.annotations[" + baov1.AnnotationBreakGlassAck + "]"
	case ControlRestart:
		return "metadata.annotations[" + baov1.AnnotationRestart + "]"
	case ControlSnapshot:
		return "metadata.annotations[" + baov1.AnnotationSnapshot + "]"
	case ControlRestore:
		return "metadata.annotations[" + baov1.AnnotationRestore + "]"
	case ControlRehearse:
		return "metadata.annotations[" + baov1.AnnotationRehearse + "]"
	case ControlRecoverQuorum:
		return "metadata.annotations[" + baov1.AnnotationRecoverQuorum + "]"
	}
	return "spec.upgrade.paused"
}

// annotation is the annotation a control writes; empty for pause and resume.
func (ctl Control) annotation() string {
	switch ctl {
	case ControlPromote:
		return baov1.AnnotationPromote
	case ControlRollback:
		return baov1.AnnotationRollback
	case ControlRetry:
		return baov1.AnnotationRetry
	case ControlBreakGlassAck:
		return baov1.AnnotationBreakGlassAck
	case ControlRestart:
		return baov1.AnnotationRestart
	case ControlSnapshot:
		return baov1.AnnotationSnapshot
	case ControlRestore:
		return baov1.AnnotationRestore
	case ControlRehearse:
		return baov1.AnnotationRehearse
	case ControlRecoverQuorum:
		return baov1.AnnotationRecoverQuorum
	}
	return ""
}

// Verdict is what kubectl bao does with a control request in the cluster's current
// state, decided by the operator's own rules.
type Verdict struct {
	// Write is true when the request is written: the operator will act on it.
	Write bool
	// Noop is true when nothing needs writing (pause while paused); not an error.
	Noop bool
	// Why says, when nothing is written, why.
	Why string
	// Next says what the operator does next once the value is written.
	Next string
	// Warnings are what a person should know although the request is written.
	Warnings []string
	// ValuePrefix starts the written value, its separator included (restore
	// --in-place: the receipt's SHA-256 and "-", which binds the request to it;
	// rehearse: the version and "+"); a fresh token follows it.
	ValuePrefix string
}

// DecideInput is what Decide needs besides the cluster.
type DecideInput struct {
	// Control is the request.
	Control Control
	// Nonce is --nonce of break-glass ack.
	Nonce string
	// FieldManager is the field manager the request is written under; break-glass
	// records it as acknowledgedBy.
	FieldManager string
	// Now is the one clock reading.
	Now time.Time
	// SHA256 is --sha256 of restore --in-place: the receipt to restore; empty
	// picks the newest.
	SHA256 string
	// To is --to of rehearse: the version to rehearse.
	To string
	// Annotation is --annotation of pause and resume: the baokeeper.dev/pause
	// annotation instead of spec.upgrade.paused.
	Annotation bool
	// From is --from of recover-quorum: the survivor to recover from.
	From string
}

// Decide says whether a control request is written, mirroring how the operator
// handles it (adminops.handleRequests): promote only while bluegreen.AcceptsPromote
// (a value set before the hold is refused and releases nothing), rollback only
// while bluegreen.AcceptsRollback, retry only after a failure or a rollback,
// break-glass ack only with the current nonce (breakglass.Acknowledge), pause and
// resume only when they change spec.upgrade.paused. What the operator would refuse
// is not written at all.
func Decide(c *baov1.OpenBaoCluster, in DecideInput) Verdict {
	var v Verdict
	obs := Observation(c, in.Now)
	switch in.Control {
	case ControlPromote:
		v = decidePromote(c, control.Judge(upgrade.RequestPromote, "", c, obs))
	case ControlRollback:
		v = decideRollback(c, control.Judge(upgrade.RequestRollback, "", c, obs))
	case ControlRetry:
		v = decideRetry(c, control.Judge(upgrade.RequestRetry, "", c, obs))
	case ControlPause, ControlResume:
		return decidePause(c, in.Control == ControlPause, in.Annotation)
	case ControlBreakGlassAck:
		return decideAck(c, in, control.Judge(upgrade.RequestBreakGlassAck, in.Nonce, c, obs))
	case ControlRecoverQuorum:
		// Judged from status alone: whether the survivor and the other voters answer
		// now is the operator's to see, and it refuses with the same words.
		return decideRecoverQuorum(c, in, control.Judge(upgrade.RequestRecoverQuorum, in.From+":"+in.Nonce, c, nil))
	case ControlRestart:
		return decideRestart(c, control.Judge(upgrade.RequestRestart, "", c, obs))
	case ControlSnapshot:
		v = decideSnapshot(c, control.Judge(upgrade.RequestSnapshot, "", c, obs))
	case ControlRestore:
		sha := in.SHA256
		if rs := Receipts(c); sha == "" && len(rs) > 0 {
			sha = rs[0].SHA256
		}
		v = decideRestore(c, sha, control.Judge(upgrade.RequestRestore, sha, c, obs))
	case ControlRehearse:
		v = decideRehearse(c, in.To, control.Judge(upgrade.RequestRehearse, in.To, c, obs))
	default:
		return Verdict{Why: fmt.Sprintf("unknown control %q", in.Control)}
	}
	if bg := c.Status.BreakGlass; v.Write && bg != nil && bg.Active {
		v.Warnings = append(v.Warnings, fmt.Sprintf("break-glass is active (%s): the operator records this request, but nothing moves until break-glass is acknowledged: "+
			"kubectl bao break-glass ack %s -n %s --nonce %s", bg.Reason, c.Name, c.Namespace, bg.Nonce))
	}
	return v
}

func decidePromote(c *baov1.OpenBaoCluster, j control.Verdict) Verdict {
	bg := c.Status.BlueGreen
	if !j.Accept {
		why := "no promotion is awaited: " + j.Why
		if bg != nil && bg.Promotion == baov1.PromotionPending && c.Spec.Upgrade.BlueGreen.AutoPromote {
			why += "; spec.upgrade.blueGreen.autoPromote is true, so none will be: the hold is released on its own"
		} else if bg != nil && bg.Promotion != baov1.PromotionRequested && bg.Promotion != baov1.PromotionAutomatic {
			why += fmt.Sprintf("; kubectl bao status %s -n %s shows when the hold begins", c.Name, c.Namespace)
		}
		return Verdict{Why: why}
	}
	return Verdict{Write: true, Next: fmt.Sprintf("On its next pass the operator releases the hold (status.blueGreen.promotion: Requested, event PromoteAccepted). "+
		"Then green %s gets the votes, one member at a time (PromoteGreen); blue's followers are demoted (DemoteBlue); blue's leader %s steps down once, onto green "+
		"(TransferLeadership: once a green member leads there is no rollback, only a restore from the pre-upgrade snapshot); the client Service moves to green (Cutover); "+
		"blue is removed from Raft and deleted (RemoveBlue, Cleanup), and status.currentVersion becomes %s.",
		bg.Green.StatefulSet, orDash(c.Status.Leader), orDash(bg.Green.Version))}
}

func decideRollback(c *baov1.OpenBaoCluster, j control.Verdict) Verdict {
	if !j.Accept {
		return Verdict{Why: j.Why}
	}
	bg := c.Status.BlueGreen
	next := fmt.Sprintf("On its next pass the operator starts the rollback (status.blueGreen.phase: RollbackPromoteBlue, event RollbackStarted): "+
		"a step in flight finishes first; blue members that were demoted vote again; green's voters are demoted and green's peers removed from Raft; "+
		"then green's StatefulSet %s and its volumes are deleted. Blue's leader leads throughout (no election) and status.currentVersion stays %s. "+
		"Afterwards the RolledBack condition says what to do: set spec.version back to %s, or kubectl bao retry %s -n %s to try %s again.",
		orDash(bg.Green.StatefulSet), orDash(bg.Blue.Version), orDash(bg.Blue.Version), c.Name, c.Namespace, orDash(bg.Green.Version))
	if up := c.Status.Upgrade; up != nil && up.Failure != nil {
		next += fmt.Sprintf(" The failure (%s) is cleared and recorded as the rollback's reason.", up.Failure.Reason)
	}
	return Verdict{Write: true, Next: next}
}

func decideRetry(c *baov1.OpenBaoCluster, j control.Verdict) Verdict {
	st := &c.Status
	if !j.Accept {
		return Verdict{Why: j.Why}
	}
	switch j.Retry {
	case control.RetryRollback:
		lr := st.LastRollback
		return Verdict{Write: true, Next: fmt.Sprintf("The upgrade to %s may start again: while spec.version names it, the operator plans it afresh on its next pass "+
			"(prechecks, snapshot, then the %s strategy), as for any new version.", lr.TargetVersion, c.GetStrategy())}
	case control.RetryUpgrade:
		f := st.Upgrade.Failure
		next := fmt.Sprintf("On its next pass the operator clears status.upgrade.failure (%s on %s, event RetryRequested) and goes on from what it observes: "+
			"the failed step's clock starts again and an executor step gets %d more attempts; members already on the target are not touched again.",
			f.Reason, orDash(f.Pod), operation.DefaultMaxJobAttempts)
		if f.Reason == baov1.FailureValidationFailed {
			next += " The validation hook runs once more; if it fails again the upgrade holds again."
		}
		return Verdict{Write: true, Next: next}
	case control.RetryRehearsal:
		return Verdict{Write: true, Next: fmt.Sprintf("On its next pass the operator drops the failed rehearsal of the upgrade to %s (event RetryRequested) "+
			"and rehearses it again on a new copy, from the newest snapshot; the real upgrade starts only after that one passed.", st.Upgrade.TargetVersion)}
	default:
		f := st.Scaling.Failure
		return Verdict{Write: true, Next: fmt.Sprintf("On its next pass the operator clears status.scaling.failure (%s on %s, event RetryRequested) and runs the step again from what it observes.",
			f.Reason, orDash(f.Pod))}
	}
}

// decideRestart uses the operator's own rule: refused while break-glass is active,
// queued behind an operation in progress.
func decideRestart(c *baov1.OpenBaoCluster, j control.Verdict) Verdict {
	if !j.Accept {
		return Verdict{Why: j.Why}
	}
	next := "The operator records the token in status.restart (event RestartRequested) and sets it on the member pod template: the rollout then restarts every member, " +
		"one at a time, followers first and the leader last with one hand-off, each gated on Raft; kubectl bao status follows it."
	if l := c.Status.OperationLock; l != nil {
		next += fmt.Sprintf(" It is queued: %s runs now (%s); members it replaces come back on the new template, and the rollout restarts the rest once it ends.", l.Operation, l.Message)
	}
	return Verdict{Write: true, Next: next}
}

// decideSnapshot uses the operator's own rule: refused without a bucket, queued
// behind an operation in progress.
func decideSnapshot(c *baov1.OpenBaoCluster, j control.Verdict) Verdict {
	if !j.Accept {
		return Verdict{Why: j.Why}
	}
	t := c.SnapshotTarget()
	next := fmt.Sprintf("The operator takes a snapshot (event SnapshotRequested, then SnapshotStarted and SnapshotTaken): an executor Job streams it from the leader "+
		"into %s, reads it back and checks its size and SHA-256; its receipt is listed in status.snapshots.taken with this token.",
		snapshot.Location(t.Bucket, snapshot.Folder(c, t)))
	if _, ok := snapshot.RetentionOf(c.Spec.Snapshots.Retention); ok {
		next += " Then retention prunes the older objects (status.snapshots.lastPrune)."
	}
	if l := c.Status.OperationLock; l != nil && l.Operation != operation.OperationSnapshot {
		next += fmt.Sprintf(" It is queued: %s runs now (%s) and holds the cluster; the snapshot is taken when it ends.", l.Operation, l.Message)
	} else if snapshot.Running(&c.Status) {
		next += " It is queued behind the snapshot in progress."
	}
	return Verdict{Write: true, Next: next}
}

// decideRestore uses the operator's own rule (snapshot.DecideRestore): refused
// during an upgrade, for a checksum no receipt has, for a snapshot newer than the
// cluster; queued behind an operation in progress.
func decideRestore(c *baov1.OpenBaoCluster, sha string, j control.Verdict) Verdict {
	if !j.Accept {
		return Verdict{Why: j.Why}
	}
	rc := snapshot.FindReceipt(&c.Status, sha)
	next := fmt.Sprintf("The operator records the request in status.inPlaceRestore (event RestoreRequested) and, holding the operation lock, restores %s "+
		"(taken %s, Raft index %d): an executor Job downloads it, checks its SHA-256 and archive, sends it to the leader and waits until the leader applied it; "+
		"then every member must be an unsealed, healthy voter at the restored index (event RestoreCompleted). Every write made to %s since %s is lost. "+
		"A loss of quorum during the restore is break-glass.",
		rc.Location, fmtTime(rc.TakenAt), rc.RaftIndex, c.Name, fmtTime(rc.TakenAt))
	if l := c.Status.OperationLock; l != nil {
		next += fmt.Sprintf(" It is queued: %s runs now (%s); the restore starts when it ends.", l.Operation, l.Message)
	}
	return Verdict{Write: true, Next: next, ValuePrefix: sha + "-"}
}

// decideRehearse uses the operator's own rule (snapshot.DecideRehearse and the
// upgrade's version-pair rule): refused during an upgrade, for a version that is
// not later than the cluster's or that an upgrade could not reach, without a
// verified snapshot; queued behind an operation in progress.
func decideRehearse(c *baov1.OpenBaoCluster, to string, j control.Verdict) Verdict {
	if !j.Accept {
		return Verdict{Why: j.Why}
	}
	to = snapshot.RehearseRequestVersion(to)
	newest := snapshot.Newest(&c.Status)
	next := fmt.Sprintf("The operator records the request in status.rehearsal (event RehearsalRequested) and, holding the operation lock, creates %s from %s "+
		"(taken %s), lets it restore and grow, upgrades it from %s to %s with strategy %s and the same gates, reads the restore canary back, and deletes it "+
		"(event RehearsalPassed or RehearsalFailed). Nothing of %s changes. An upgrade from %s to %s within %s counts a rehearsal that passed "+
		"for spec.upgrade.rehearsal Required.",
		snapshot.RehearsalClusterName(c), newest.Location, fmtTime(newest.TakenAt), c.Status.CurrentVersion, to, c.GetStrategy(), c.Name,
		c.Status.CurrentVersion, to, baov1.RehearsalValidFor)
	if l := c.Status.OperationLock; l != nil {
		next += fmt.Sprintf(" It is queued: %s runs now (%s); the rehearsal starts when it ends.", l.Operation, l.Message)
	}
	return Verdict{Write: true, Next: next, ValuePrefix: to + "+"}
}

// RehearsalOutcome is the outcome of the rehearsal requested with value: its
// status once it ended, an error once it failed or was refused, neither while it
// runs.
func RehearsalOutcome(c *baov1.OpenBaoCluster, value string) (*baov1.RehearsalStatus, error) {
	if c == nil || c.Status.Requests.Rehearse != value {
		return nil, nil
	}
	r := c.Status.Rehearsal
	switch {
	case r == nil || r.Request != value:
		return nil, fmt.Errorf("the operator handled %s=%s without rehearsing: kubectl describe openbaocluster %s -n %s shows the RequestRefused event",
			baov1.AnnotationRehearse, value, c.Name, c.Namespace)
	case r.Step != baov1.RehearsalStepDone:
		return nil, nil
	case r.Result == nil || r.Result.Outcome != baov1.DrillPassed:
		msg := "it ended without a verdict"
		if r.Result != nil {
			msg = r.Result.Message
		}
		return r.DeepCopy(), fmt.Errorf("the rehearsal %s=%s failed: %s", baov1.AnnotationRehearse, value, msg)
	}
	return r.DeepCopy(), nil
}

// RestoreOutcome is the outcome of the in-place restore requested with value:
// its status once it ended, an error once it failed or was refused, neither while
// it is pending.
func RestoreOutcome(c *baov1.OpenBaoCluster, value string) (*baov1.RestoreStatus, error) {
	if c == nil || c.Status.Requests.Restore != value {
		return nil, nil
	}
	r := c.Status.InPlaceRestore
	switch {
	case r == nil || r.Request != value:
		return nil, fmt.Errorf("the operator handled %s=%s without restoring: kubectl describe openbaocluster %s -n %s shows the RequestRefused event",
			baov1.AnnotationRestore, value, c.Name, c.Namespace)
	case r.Step == baov1.RestoreStepFailed:
		return r.DeepCopy(), fmt.Errorf("the in-place restore %s=%s failed: %s", baov1.AnnotationRestore, value, r.Failure)
	case r.Step == baov1.RestoreStepDone:
		return r.DeepCopy(), nil
	}
	return nil, nil
}

// SnapshotOutcome is the outcome of the snapshot requested with token: its receipt
// once taken, an error once it failed or was refused, neither while it is pending.
func SnapshotOutcome(c *baov1.OpenBaoCluster, token string) (*baov1.SnapshotReceipt, error) {
	if c == nil {
		return nil, nil
	}
	if ss := c.Status.Snapshots; ss != nil {
		for i := range ss.Taken {
			if ss.Taken[i].Request == token {
				return ss.Taken[i].DeepCopy(), nil
			}
		}
		if f := ss.LastFailure; f != nil && f.Request == token {
			return nil, fmt.Errorf("the snapshot %s=%s failed: %s", baov1.AnnotationSnapshot, token, f.Message)
		}
		if ss.Requested == token || (ss.Current != nil && ss.Current.Request == token) {
			return nil, nil
		}
	}
	if c.Status.Requests.Snapshot == token {
		// Handled, but neither queued, running, taken nor failed: refused (the
		// operator's event says why), or its receipt already left the list.
		return nil, fmt.Errorf("the operator handled %s=%s without taking a snapshot for it: kubectl describe openbaocluster %s -n %s shows the RequestRefused event",
			baov1.AnnotationSnapshot, token, c.Name, c.Namespace)
	}
	return nil, nil
}

func decidePause(c *baov1.OpenBaoCluster, pause, annotation bool) Verdict {
	field, set, other, otherSet := "spec.upgrade.paused", c.Spec.Upgrade.Paused, "the "+baov1.AnnotationPause+" annotation", c.PausedByAnnotation()
	otherFlag := "--annotation"
	if annotation {
		field, set, other, otherSet = other, otherSet, field, set
		otherFlag = "without --annotation"
	}
	if set == pause {
		state := "false: nothing is paused"
		if pause {
			state = "true already: the upgrade holds at its next safe point"
		}
		if annotation {
			state = "not set: nothing is paused by it"
			if pause {
				state = "set already: the upgrade holds at its next safe point"
			}
		}
		v := Verdict{Noop: true, Why: field + " is " + state}
		if !pause && otherSet {
			v.Why += fmt.Sprintf("; %s still pauses it: kubectl bao resume %s %s -n %s", other, c.Name, otherFlag, c.Namespace)
		}
		return v
	}
	up, bg := c.Status.Upgrade, c.Status.BlueGreen
	if !pause {
		next := "The operator goes on from where the upgrade held (UpgradePaused becomes False)."
		if up == nil {
			next = "No upgrade holds: the next version change runs without holding."
		}
		v := Verdict{Write: true, Next: next}
		if otherSet {
			v.Next = "Nothing goes on yet."
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s still pauses the cluster: resume it too (kubectl bao resume %s %s -n %s)", other, c.Name, otherFlag, c.Namespace))
		}
		return v
	}
	v := Verdict{Write: true}
	switch {
	case up == nil:
		v.Next = "No upgrade runs now: the next version change is planned and then holds before its snapshot, with UpgradePaused=True."
	case bg != nil && bluegreen.IsRollback(bg.Phase):
		v.Next = "The flag is recorded for the next upgrade."
		v.Warnings = append(v.Warnings, fmt.Sprintf("a rollback runs (%s): spec.upgrade.paused does not hold a rollback, it goes on to the end", bg.Phase))
	case bg != nil:
		v.Next = fmt.Sprintf("The blue-green upgrade holds before its next executor step (it is in phase %s), with UpgradePaused=True; a step in flight finishes first.", bg.Phase)
	default:
		v.Next = "The member in progress finishes; the upgrade holds before the next one, with UpgradePaused=True and the message saying where it holds."
		if s := up.CurrentStep; s != nil && s.Pod != "" {
			v.Next = fmt.Sprintf("The member in progress (%s) finishes; the upgrade holds before the next one, with UpgradePaused=True and the message saying where it holds.", s.Pod)
		}
	}
	return v
}

func decideAck(c *baov1.OpenBaoCluster, in DecideInput, j control.Verdict) Verdict {
	bg := c.Status.BreakGlass
	if !j.Accept {
		why := j.Why
		if bg != nil && bg.Active {
			why += fmt.Sprintf("; copy status.breakGlass.nonce (kubectl bao status %s -n %s shows it)", c.Name, c.Namespace)
		}
		return Verdict{Why: why}
	}
	return Verdict{Write: true, Next: fmt.Sprintf("On its next pass the operator leaves break-glass (%s): it records acknowledgedAt and acknowledgedBy (%s, event BreakGlassAcknowledged), "+
		"observes the cluster afresh and goes on from what it sees: a failed rollback step gets a fresh budget of attempts and time, an upgrade that lost its quorum goes on "+
		"once autopilot answers again. If the cause is still there, break-glass is entered again with a new nonce.", bg.Reason, orDash(in.FieldManager))}
}

func decideRecoverQuorum(c *baov1.OpenBaoCluster, in DecideInput, j control.Verdict) Verdict {
	bg := c.Status.BreakGlass
	if !j.Accept {
		why := j.Why
		if bg != nil && bg.Active && bg.Reason == baov1.BreakGlassMajorityLost {
			why += fmt.Sprintf(" (status.breakGlass: survivor %s, nonce %s; kubectl bao status %s -n %s shows them)", orDash(bg.Survivor), bg.Nonce, c.Name, c.Namespace)
		}
		return Verdict{Why: why}
	}
	return Verdict{Write: true, ValuePrefix: in.From + ":", Warnings: []string{"what a recovery from " + in.From + " loses: " + bg.Loss},
		Next: fmt.Sprintf("On its next pass the operator acknowledges break-glass (acknowledgedBy %s) and recovers from %s (status.quorumRecovery, event QuorumRecoveryRequested): "+
			"a Job on %s's node writes peers.json naming it the only voter (WritePeers); %s's pod restarts and OpenBao recovers from the file (RestartSurvivor, WaitSoleVoter); "+
			"the other members' data volume claims and pods are deleted so that they start empty and join %s (ReplaceOthers); then scaling makes them voters. "+
			"It refuses, and changes nothing, if another voter answers again before it starts.", orDash(in.FieldManager), in.From, in.From, in.From, in.From)}
}

// RecoveryOutcome is the outcome of the recovery requested with value: its status
// once done, an error once it failed or was refused, neither while it runs.
func RecoveryOutcome(c *baov1.OpenBaoCluster, value string) (*baov1.QuorumRecoveryStatus, error) {
	if c == nil || c.Status.Requests.RecoverQuorum != value {
		return nil, nil
	}
	r := c.Status.QuorumRecovery
	switch {
	case r == nil || r.Request != value:
		return nil, fmt.Errorf("the operator handled %s=%s without recovering: kubectl describe openbaocluster %s -n %s shows the RequestRefused event",
			baov1.AnnotationRecoverQuorum, value, c.Name, c.Namespace)
	case r.Step == baov1.QuorumRecoveryFailed:
		return r.DeepCopy(), fmt.Errorf("the recovery %s=%s failed: %s", baov1.AnnotationRecoverQuorum, value, r.Failure)
	case r.Step == baov1.QuorumRecoveryDone:
		return r.DeepCopy(), nil
	}
	return nil, nil
}

// Set writes a control into c in memory: the annotation with value, or
// spec.upgrade.paused. The caller patches the difference.
func Set(c *baov1.OpenBaoCluster, ctl Control, value string) {
	switch ctl {
	case ControlPause:
		c.Spec.Upgrade.Paused = true
	case ControlResume:
		c.Spec.Upgrade.Paused = false

	default:
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[ctl.annotation()] = value
	}
}

// NewToken draws a fresh control token: the Unix time and 8 random hex digits, such
// as 1764633600-3fa9c2d1. It passes the operator's check of annotation values, sorts
// by time, and differs from every value set before (the operator acts once per new
// value). src defaults to crypto/rand.
func NewToken(now time.Time, src io.Reader) (string, error) {
	if src == nil {
		src = rand.Reader
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(src, b); err != nil {
		return "", fmt.Errorf("failed to draw a random token: %w", err)
	}
	tok := fmt.Sprintf("%d-%s", now.Unix(), hex.EncodeToString(b))
	if err := upgrade.ValidateRequestValue(tok); err != nil {
		return "", fmt.Errorf("failed to draw a valid token: %w", err)
	}
	return tok, nil
}

// Value is the value a control writes: the nonce for break-glass ack, a fresh
// token for the other annotations (drawn again if it equals the annotation's current
// or last handled value), none for pause and resume.
func Value(c *baov1.OpenBaoCluster, ctl Control, nonce string, now time.Time, src io.Reader) (string, error) {
	switch ctl {
	case ControlPause, ControlResume:
		return "", nil
	case ControlBreakGlassAck, ControlRecoverQuorum:
		// The nonce binds the request to one break-glass (recover-quorum: after the
		// survivor, Verdict.ValuePrefix).
		return nonce, nil
	}
	handled := map[Control]string{ControlPromote: c.Status.Requests.Promote, ControlRollback: c.Status.Requests.Rollback, ControlRetry: c.Status.Requests.Retry,
		ControlRestart: c.Status.Requests.Restart, ControlSnapshot: c.Status.Requests.Snapshot}[ctl]
	for range 3 {
		tok, err := NewToken(now, src)
		if err != nil {
			return "", err
		}
		if tok != c.Annotations[ctl.annotation()] && tok != handled {
			return tok, nil
		}
	}
	return "", fmt.Errorf("failed to draw a token that differs from %s's current value: check the random source", ctl.annotation())
}

// SetPauseAnnotation sets the baokeeper.dev/pause annotation to "true" (pause) or
// removes it (resume), in memory; the caller patches the difference.
func SetPauseAnnotation(c *baov1.OpenBaoCluster, pause bool) {
	if !pause {
		delete(c.Annotations, baov1.AnnotationPause)
		return
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[baov1.AnnotationPause] = "true"
}
