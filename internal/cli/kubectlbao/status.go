package kubectlbao

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/breakglass"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
)

// RenderStatus writes what kubectl bao status shows of a cluster, like kubectl
// describe: the summary, the Raft view with the failure tolerance, every member, the
// upgrade (strategy, progress, plan, current step, what it waits for, prechecks,
// failure), the blue-green phase, the snapshot receipts, break-glass with its nonce
// and recovery steps, and the conditions. It is pure: now is the one clock reading.
func RenderStatus(w io.Writer, c *baov1.OpenBaoCluster, now time.Time) error {
	d := newDescriber(w)
	st := &c.Status
	d.kv(0, "Name", "%s", c.Name)
	d.kv(0, "Namespace", "%s", c.Namespace)
	d.kv(0, "Phase", "%s", orDash(string(st.Phase)))
	d.kv(0, "Message", "%s", orDash(st.Message))
	d.kv(0, "Version", "%s", versionLine(c))
	d.kv(0, "Strategy", "%s", c.GetStrategy())
	d.kv(0, "Paused", "%s", pausedLine(c))
	d.kv(0, "Members", "%d ready of %d desired (StatefulSet %s)", st.ReadyMembers, c.GetReplicas(), c.ServingStatefulSet())
	if l := st.OperationLock; l != nil {
		d.kv(0, "Operation lock", "%s since %s: %s", l.Operation, when(l.AcquiredAt, now), orDash(l.Message))
		for i, w := range l.Waiting {
			d.kv(1, fmt.Sprintf("Waiting %d", i+1), "%s", w)
		}
	}

	renderRaft(d, c)
	renderMembers(d, c)
	renderCertificates(d, c, now)
	renderBreakGlass(d, c, now)
	renderUpgrade(d, c, now)
	renderBlueGreen(d, c, now)
	renderScaling(d, c, now)
	renderSnapshot(d, 0, "Last snapshot", st.LastSnapshot, "none taken yet", now)
	renderSnapshots(d, c, now)
	renderRestore(d, "Restore", st.Restore, now)
	renderRestore(d, "In-place restore", st.InPlaceRestore, now)
	if up := st.Upgrade; up != nil {
		renderRehearsal(d, "Upgrade rehearsal", up.Rehearsal, now)
	}
	renderRehearsal(d, "Rehearsal", st.Rehearsal, now)
	if lr := st.LastRollback; lr != nil {
		d.head(0, "Last rollback")
		d.kv(1, "Versions", "%s kept, %s rolled back", orDash(lr.FromVersion), orDash(lr.TargetVersion))
		d.kv(1, "At", "%s", when(lr.At, now))
		d.kv(1, "Reason", "%s", orDash(lr.Reason))
		if lr.Retry == "" {
			d.kv(1, "Again", "set spec.version back to %s, or try %s again with: kubectl bao retry %s -n %s", orDash(lr.FromVersion), orDash(lr.TargetVersion), c.Name, c.Namespace)
		} else {
			d.kv(1, "Again", "allowed by %s=%s", baov1.AnnotationRetry, lr.Retry)
		}
	}
	renderFleet(d, c, now)
	renderConditions(d, c, now)
	renderRequests(d, c)
	d.kv(0, "Events", "kubectl bao timeline %s -n %s", c.Name, c.Namespace)
	return d.flush()
}

func versionLine(c *baov1.OpenBaoCluster) string {
	cur := c.Status.CurrentVersion
	switch {
	case cur == "":
		return fmt.Sprintf("%s (nothing observed yet: status.currentVersion is empty)", c.Spec.Version)
	case upgrade.SameVersion(cur, c.Spec.Version):
		return fmt.Sprintf("%s (every member runs it)", c.Spec.Version)
	}
	return fmt.Sprintf("%s wanted, %s runs (status.currentVersion)", c.Spec.Version, cur)
}

func pausedLine(c *baov1.OpenBaoCluster) string {
	if c.PausedByAnnotation() && !c.Spec.Upgrade.Paused {
		return fmt.Sprintf("yes (the %s annotation): an upgrade holds at its next safe point; resume with kubectl bao resume %s --annotation -n %s", baov1.AnnotationPause, c.Name, c.Namespace)
	}
	if !c.Spec.Upgrade.Paused {
		return "no"
	}
	return fmt.Sprintf("yes (spec.upgrade.paused): an upgrade holds at its next safe point; resume with kubectl bao resume %s -n %s", c.Name, c.Namespace)
}

func renderRaft(d *describer, c *baov1.OpenBaoCluster) {
	v := VotersOf(&c.Status)
	d.head(0, "Raft")
	d.kv(1, "Leader", "%s", orDash(c.Status.Leader))
	if !v.Known {
		d.kv(1, "Voters", "unknown (status.voters is empty: autopilot could not be read)")
		d.kv(1, "Failure tolerance", "unknown")
		return
	}
	d.kv(1, "Voters", "%d healthy of %d (a majority is %d)", v.Healthy, v.Total, v.Quorum())
	if r := c.Status.Raft; r != nil && r.NonVoters > 0 {
		d.kv(1, "Non-voters", "%d: a member that does not vote lowers the failure tolerance its size promises (condition Degraded, FailureToleranceLow); "+
			"the operator promotes a non-voter once it has been healthy and caught up for %s", r.NonVoters, operation.NonVoterPromoteAfter)
	}
	switch {
	case v.QuorumLost():
		d.kv(1, "Failure tolerance", "0: QUORUM LOST, %d healthy voters of the %d a majority needs", v.Healthy, v.Quorum())
	default:
		d.kv(1, "Failure tolerance", "%d (healthy voters minus the majority)", v.FailureTolerance())
	}
}

func renderMembers(d *describer, c *baov1.OpenBaoCluster) {
	if len(c.Status.Members) == 0 {
		d.kv(0, "Members observed", "none yet")
		return
	}
	d.head(0, "Members observed")
	rows := make([][]string, 0, len(c.Status.Members))
	for _, m := range c.Status.Members {
		rows = append(rows, []string{m.Name, orDash(string(m.RaftRole)), orDash(m.Version), yesNo(m.Healthy), yesNo(m.Ready), orDash(m.Image)})
	}
	d.table(1, []string{"NAME", "ROLE", "VERSION", "HEALTHY", "READY", "IMAGE"}, rows)
}

// renderCertificates shows the certificate the TLS Secret holds against the one each
// member serves (read from its last health read): a member on an older certificate
// is named, with when that one expires.
func renderCertificates(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	t := c.Status.TLS
	if t == nil || t.CertificateSHA256 == "" {
		return
	}
	d.head(0, "Serving certificate")
	d.kv(1, "Stored", "%s, expires %s", short(t.CertificateSHA256), when(t.NotAfter, now))
	if t.RenewAt != nil {
		d.kv(1, "Renewed", "%s (spec.tls.renewBefore)", when(t.RenewAt, now))
	}
	var current, older, unknown []string
	for _, m := range c.Status.Members {
		switch {
		case m.ServedCertificateSHA256 == "":
			unknown = append(unknown, m.Name)
		case m.ServedCertificateSHA256 == t.CertificateSHA256:
			current = append(current, m.Name)
		default:
			older = append(older, fmt.Sprintf("%s (%s, expires %s)", m.Name, short(m.ServedCertificateSHA256), when(m.ServedCertificateNotAfter, now)))
		}
	}
	d.kv(1, "Served by", "%s", orDash(strings.Join(current, ", ")))
	if len(older) > 0 {
		d.kv(1, "Older, served by", "%s: the rollout restarts them onto the stored one", strings.Join(older, ", "))
	}
	if len(unknown) > 0 {
		d.kv(1, "Not read", "%s", strings.Join(unknown, ", "))
	}
}

// short is the first 12 hex digits of a fingerprint.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func renderUpgrade(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	up := c.Status.Upgrade
	if up == nil {
		d.kv(0, "Upgrade", "none in progress")
		return
	}
	d.head(0, "Upgrade")
	d.kv(1, "Strategy", "%s", orDash(string(up.Strategy)))
	d.kv(1, "Versions", "%s -> %s (image %s)", orDash(up.FromVersion), orDash(up.TargetVersion), orDash(up.TargetImage))
	d.kv(1, "Started", "%s", when(up.StartedAt, now))
	if p := up.Progress; p != nil {
		d.kv(1, "Progress", "%s, %d of %d done", orDash(p.Stage), p.Completed, p.Total)
	}
	if plan := up.Plan; plan != nil && len(plan.Pods) > 0 {
		d.kv(1, "Plan", "%s", planLine(c, plan.Pods))
	}
	if len(up.CompletedPods) > 0 {
		d.kv(1, "Completed", "%s", strings.Join(up.CompletedPods, ", "))
	}
	if s := up.CurrentStep; s != nil {
		d.kv(1, "Current step", "%s", stepLine(s, now))
	}
	if o := up.Offline; o != nil && o.StoppedAt != nil {
		d.kv(1, "Stopped", "every member, %s (leader %s at committed index %d)", when(o.StoppedAt, now), orDash(o.LeaderBefore), o.CommittedIndex)
		if o.ServingAt != nil {
			d.kv(1, "Serving", "again %s: no member answered for %s", when(o.ServingAt, now), orDash(o.Window()))
		} else {
			d.kv(1, "Serving", "not yet: no member answers until a leader on %s is elected", orDash(up.TargetVersion))
		}
	}
	d.kv(1, "Waiting for", "%s", waitingFor(c))
	if up.DeferredVersion != "" {
		d.kv(1, "Deferred", "spec.version %s is planned once this upgrade ends", up.DeferredVersion)
	}
	if f := up.Failure; f != nil {
		d.kv(1, "Failure", "%s on %s at %s: %s", orDash(string(f.Reason)), orDash(f.Pod), when(f.At, now), orDash(f.Message))
		d.kv(1, "Retry", "fix the cause, then: kubectl bao retry %s -n %s", c.Name, c.Namespace)
	}
	if plan := up.Plan; plan != nil {
		if len(plan.Prechecks) > 0 {
			d.head(1, "Prechecks")
			rows := make([][]string, 0, len(plan.Prechecks))
			for _, p := range plan.Prechecks {
				rows = append(rows, []string{p.Name, orDash(string(p.Result)), orDash(p.Message)})
			}
			d.table(2, []string{"NAME", "RESULT", "MESSAGE"}, rows)
		}
		d.kv(1, "Snapshot target", "%s", snapshotTarget(c.Spec.Upgrade.PreUpgradeSnapshot, plan.SnapshotLocation))
		d.kv(1, "Undo", "%s", orDash(plan.UndoPath))
	}
	renderSnapshot(d, 1, "Pre-upgrade snapshot", up.Snapshot, snapshotPending(c), now)
}

// planLine lists the plan in order, each member marked: done, in progress, the
// leader.
func planLine(c *baov1.OpenBaoCluster, pods []string) string {
	up := c.Status.Upgrade
	parts := make([]string, 0, len(pods))
	for i, p := range pods {
		var marks []string
		if slices.Contains(up.CompletedPods, p) {
			marks = append(marks, "done")
		} else if s := up.CurrentStep; s != nil && s.Pod == p {
			marks = append(marks, "in progress")
		}
		if p == c.Status.Leader {
			marks = append(marks, "leader")
		}
		item := fmt.Sprintf("%d. %s", i+1, p)
		if len(marks) > 0 {
			item += " (" + strings.Join(marks, ", ") + ")"
		}
		parts = append(parts, item)
	}
	return strings.Join(parts, "  ")
}

func stepLine(s *baov1.UpgradeStep, now time.Time) string {
	line := fmt.Sprintf("%s %s since %s", orDash(string(s.Action)), orDash(s.Pod), when(s.StartedAt, now))
	if s.Attempts > 0 {
		limit := s.MaxAttempts
		if limit == 0 {
			limit = operation.DefaultMaxJobAttempts
		}
		line += fmt.Sprintf(", attempt %d of %d", s.Attempts, limit)
	}
	if s.GatesPassedAt != nil {
		line += ", every gate passed at " + when(s.GatesPassedAt, now) + " (settling)"
	}
	return line
}

// waitingFor is the sentence of what the upgrade waits for: the step's, the
// upgrade's, or the cluster message.
func waitingFor(c *baov1.OpenBaoCluster) string {
	up := c.Status.Upgrade
	if s := up.CurrentStep; s != nil && s.WaitingFor != "" {
		return s.WaitingFor
	}
	if up.WaitingFor != "" {
		return up.WaitingFor
	}
	return orDash(c.Status.Message)
}

func snapshotTarget(s baov1.PreUpgradeSnapshotSpec, location string) string {
	policy := s.Policy
	if policy == "" {
		policy = baov1.SnapshotAlways
	}
	switch {
	case policy == baov1.SnapshotNever:
		return "none (spec.upgrade.preUpgradeSnapshot.policy is Never: undoing means a backup taken elsewhere)"
	case location != "":
		return fmt.Sprintf("%s (policy %s)", location, policy)
	case s.S3 == nil:
		return fmt.Sprintf("not set (policy %s needs spec.upgrade.preUpgradeSnapshot.s3)", policy)
	}
	return fmt.Sprintf("%s (policy %s)", upgrade.SnapshotLocation(s), policy)
}

func renderSnapshot(d *describer, level int, title string, s *baov1.SnapshotReceipt, none string, now time.Time) {
	if s == nil {
		d.kv(level, title, "%s", none)
		return
	}
	d.head(level, title)
	d.kv(level+1, "Location", "%s", orDash(s.Location))
	d.kv(level+1, "Taken", "%s from %s on %s, Raft index %d", when(s.TakenAt, now), orDash(s.FromMember), orDash(s.Version), s.RaftIndex)
	d.kv(level+1, "Size", "%s", bytesIEC(s.SizeBytes))
	d.kv(level+1, "SHA-256", "%s", orDash(s.SHA256))
}

// renderRestore shows a restore (status.restore of a cluster that started from a
// snapshot, or status.inPlaceRestore): the snapshot, the step, what it waits for,
// and how it ended.
func renderRestore(d *describer, title string, r *baov1.RestoreStatus, now time.Time) {
	if r == nil {
		return
	}
	d.head(0, title)
	d.kv(1, "Snapshot", "%s (sha256 %s)", orDash(r.Source), orDash(r.SHA256))
	d.kv(1, "Step", "%s since %s, attempt %d", r.Step, when(r.StepStartedAt, now), r.Attempts)
	if r.StartedAt != nil {
		d.kv(1, "Started", "%s", when(r.StartedAt, now))
	}
	if r.WaitingFor != "" {
		d.kv(1, "Waiting", "%s", r.WaitingFor)
	}
	if r.AppliedIndex > 0 {
		d.kv(1, "Applied", "at Raft index %d (snapshot at %d)", r.AppliedIndex, r.RaftIndex)
	}
	if r.CompletedAt != nil {
		d.kv(1, "Completed", "%s", when(r.CompletedAt, now))
	}
	if r.Failure != "" {
		d.kv(1, "Failure", "%s", r.Failure)
	}
}

// renderRehearsal shows a rehearsal (status.upgrade.rehearsal, or a requested one
// in status.rehearsal): the versions, the copy, the step and the verdict.
func renderRehearsal(d *describer, title string, r *baov1.RehearsalStatus, now time.Time) {
	if r == nil {
		return
	}
	d.head(0, title)
	if r.Request != "" {
		d.kv(1, "Requested", "%s=%s", baov1.AnnotationRehearse, r.Request)
	}
	if r.StartedAt != nil {
		d.kv(1, "Started", "%s", when(r.StartedAt, now))
	}
	renderRehearsalFields(d, 1, r)
	if until := snapshot.RehearsalValidUntil(r); r.Request != "" && !until.IsZero() {
		d.kv(1, "Counts", "for an upgrade from %s to %s until %s", r.FromVersion, r.TargetVersion, until.UTC().Format(time.RFC3339))
	}
}

// renderSnapshots shows scheduled and requested snapshots: the schedule and the
// next time, one due or requested and what it waits for, the run in progress, the
// last failure and pruning, and the receipts kept.
func renderSnapshots(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	ss := c.Status.Snapshots
	spec := c.Spec.Snapshots
	if ss == nil && spec.Schedule == "" {
		return
	}
	d.head(0, "Snapshots")
	if spec.Schedule != "" {
		next := "-"
		if ss != nil && ss.NextScheduledAt != nil {
			next = when(ss.NextScheduledAt, now)
		}
		d.kv(1, "Schedule", "%s, next %s", orDash(ss.GetSchedule()), next)
	} else {
		d.kv(1, "Schedule", "none (on request: kubectl bao snapshot %s -n %s)", c.Name, c.Namespace)
	}
	if r := spec.Retention; r != nil {
		var parts []string
		if r.Count != nil {
			parts = append(parts, fmt.Sprintf("the newest %d", *r.Count))
		}
		if r.MaxAge != nil {
			parts = append(parts, "none older than "+string(*r.MaxAge))
		}
		d.kv(1, "Retention", "%s", strings.Join(parts, ", "))
	}
	if ss == nil {
		return
	}
	if ss.WaitingFor != "" {
		d.kv(1, "Waiting", "%s", ss.WaitingFor)
	}
	if run := ss.Current; run != nil {
		d.kv(1, "Running", "%s %s since %s, step %s, attempt %d", run.Trigger, orDash(run.Request), when(run.StartedAt, now), run.Step, run.Attempts)
	}
	if f := ss.LastFailure; f != nil {
		d.kv(1, "Last failure", "%s: %s", when(f.At, now), orDash(f.Message))
	}
	if p := ss.LastPrune; p != nil {
		line := fmt.Sprintf("%s: %d listed, %d deleted, %d kept", when(p.At, now), p.Listed, p.Deleted, p.Kept)
		if p.Failed != "" {
			line += "; " + p.Failed
		}
		d.kv(1, "Last pruning", "%s", line)
	}
	for i, r := range ss.Taken {
		d.kv(1, fmt.Sprintf("Taken %d", i+1), "%s %s, %s, %s", r.Trigger, when(r.TakenAt, now), orDash(r.Location), bytesIEC(r.SizeBytes))
	}
	renderDrills(d, c, now)
}

// renderDrills shows restore drills: the schedule and the next time, the drill in
// progress, and the last verdict.
func renderDrills(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	dr := c.Status.Snapshots.GetDrills()
	if dr == nil && c.Spec.Snapshots.Verify == nil {
		return
	}
	if v := c.Spec.Snapshots.Verify; v != nil {
		next := "-"
		if dr != nil && dr.NextScheduledAt != nil {
			next = when(dr.NextScheduledAt, now)
		}
		d.kv(1, "Restore drills", "%s, next %s", v.Schedule, next)
	}
	if dr == nil {
		return
	}
	if run := dr.Current; run != nil {
		d.kv(1, "Drill running", "%s into %s since %s, step %s", run.Snapshot, run.Cluster, when(run.StartedAt, now), run.Step)
	}
	if l := dr.Last; l != nil {
		d.kv(1, "Last drill", "%s %s: %s", l.Outcome, when(l.FinishedAt, now), orDash(l.Message))
	}
}

// snapshotPending says why the running upgrade has no snapshot receipt.
func snapshotPending(c *baov1.OpenBaoCluster) string {
	if c.Spec.Upgrade.PreUpgradeSnapshot.Policy == baov1.SnapshotNever {
		return "none (policy Never)"
	}
	return "not taken yet (nothing of the cluster changes before it is verified)"
}

func renderBlueGreen(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	bg := c.Status.BlueGreen
	if bg == nil {
		return
	}
	d.head(0, "Blue-green")
	d.kv(1, "Phase", "%s since %s%s", orDash(string(bg.Phase)), when(bg.PhaseStartedAt, now), phaseProgress(bg.Phase))
	d.kv(1, "Blue", "%s", memberSet(bg.Blue))
	d.kv(1, "Green", "%s", memberSet(bg.Green))
	if bg.SyncedSince != nil {
		d.kv(1, "In sync since", "%s (minSyncDuration %s)", when(bg.SyncedSince, now), c.GetMinSyncDuration())
	}
	d.kv(1, "Promotion", "%s", promotionLine(c))
	if s := bg.CurrentStep; s != nil {
		d.kv(1, "Current step", "%s", stepLine(s, now))
	}
	d.kv(1, "Job failures", "%d (the upgrade fails at %d)", bg.JobFailures, c.GetMaxJobFailures())
	if bg.LeaderMovedAt != nil {
		d.kv(1, "Point of no return", "passed at %s: green has led, the way back is a restore from the snapshot (%s)", when(bg.LeaderMovedAt, now), bluegreen.RestoreRunbook)
	} else if !bluegreen.IsRollback(bg.Phase) {
		d.kv(1, "Point of no return", "not yet: kubectl bao rollback %s -n %s keeps blue", c.Name, c.Namespace)
	}
	if bg.RollbackReason != "" {
		d.kv(1, "Rollback reason", "%s", bg.RollbackReason)
	}
}

// phaseProgress says where a phase stands among the upgrade's (or the rollback's).
func phaseProgress(p baov1.BlueGreenPhase) string {
	phases, what := bluegreen.Phases(), "phase"
	if bluegreen.IsRollback(p) {
		phases, what = bluegreen.RollbackPhases(), "rollback phase"
	}
	if i := slices.Index(phases, p); i >= 0 {
		return fmt.Sprintf(" (%s %d of %d)", what, i+1, len(phases))
	}
	return ""
}

func memberSet(s baov1.MemberSet) string {
	if s.StatefulSet == "" {
		return "-"
	}
	line := fmt.Sprintf("%s, %d members on %s", s.StatefulSet, s.Replicas, orDash(s.Version))
	if s.Revision != "" {
		line += ", revision " + s.Revision
	}
	return line
}

func promotionLine(c *baov1.OpenBaoCluster) string {
	bg := c.Status.BlueGreen
	switch {
	case bluegreen.AcceptsPromote(bg):
		return fmt.Sprintf("Waiting: green is in sync and waits for you: kubectl bao promote %s -n %s", c.Name, c.Namespace)
	case bg.Promotion == baov1.PromotionRequested:
		return fmt.Sprintf("Requested (%s=%s)", baov1.AnnotationPromote, orDash(c.Status.Requests.Promote))
	case bg.Promotion == baov1.PromotionAutomatic:
		return "Automatic (spec.upgrade.blueGreen.autoPromote)"
	case c.Spec.Upgrade.BlueGreen.AutoPromote:
		return fmt.Sprintf("%s: spec.upgrade.blueGreen.autoPromote releases it at the hold", orDash(string(bg.Promotion)))
	}
	return fmt.Sprintf("%s: the hold comes at phase %s", orDash(string(bg.Promotion)), baov1.BlueGreenAwaitPromotion)
}

func renderScaling(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	sc := c.Status.Scaling
	if sc == nil {
		return
	}
	d.head(0, "Scaling")
	d.kv(1, "Replicas", "%d -> %d, started %s", sc.FromReplicas, sc.TargetReplicas, when(sc.StartedAt, now))
	if s := sc.CurrentStep; s != nil {
		d.kv(1, "Current step", "%s", stepLine(s, now))
	}
	if len(sc.Completed) > 0 {
		d.kv(1, "Completed", "%s", strings.Join(sc.Completed, ", "))
	}
	d.kv(1, "Waiting for", "%s", orDash(sc.WaitingFor))
	if f := sc.Failure; f != nil {
		d.kv(1, "Failure", "%s on %s at %s: %s", orDash(string(f.Reason)), orDash(f.Pod), when(f.At, now), orDash(f.Message))
	}
}

func renderBreakGlass(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	bg := c.Status.BreakGlass
	switch {
	case bg == nil:
		d.kv(0, "Break-glass", "not active")
		return
	case !bg.Active:
		d.kv(0, "Break-glass", "not active (the last one, %s, was acknowledged at %s by %s)", orDash(string(bg.Reason)), when(bg.AcknowledgedAt, now), orDash(bg.AcknowledgedBy))
		return
	}
	d.kv(0, "Break-glass", "ACTIVE since %s: every automation of this cluster stopped until a person acknowledges", when(bg.EnteredAt, now))
	d.kv(1, "Reason", "%s", orDash(string(bg.Reason)))
	d.kv(1, "Message", "%s", orDash(bg.Message))
	d.kv(1, "Nonce", "%s", orDash(bg.Nonce))
	d.kv(1, "Leader on entry", "%s", orDash(bg.Leader))
	if bg.Reason == baov1.BreakGlassMajorityLost {
		d.kv(1, "Survivor", "%s", orDash(bg.Survivor))
		d.kv(1, "Loss", "%s", orDash(bg.Loss))
	}
	if len(bg.Members) > 0 {
		d.head(1, "Members on entry")
		rows := make([][]string, 0, len(bg.Members))
		for _, m := range bg.Members {
			row := []string{m.Name, orDash(string(m.Role)), orDash(m.Version), yesNo(m.Healthy)}
			if bg.Reason == baov1.BreakGlassMajorityLost {
				idx := "-"
				if m.CommittedIndex > 0 {
					idx = strconv.FormatInt(m.CommittedIndex, 10)
				}
				row = append(row, idx, orDash(m.Lost))
			}
			rows = append(rows, row)
		}
		head := []string{"NAME", "ROLE", "VERSION", "HEALTHY"}
		if bg.Reason == baov1.BreakGlassMajorityLost {
			head = append(head, "COMMITTED", "DATA LOST")
		}
		d.table(2, head, rows)
	}
	d.head(1, "Recovery steps")
	for i, s := range bg.RecoverySteps {
		d.line(2, "%d. %s", i+1, s)
	}
	d.kv(1, "Runbook", "%s", breakglass.Runbook(bg.Reason))
	d.kv(1, "Acknowledge", "kubectl bao break-glass ack %s -n %s --nonce %s", c.Name, c.Namespace, orDash(bg.Nonce))
}

func renderConditions(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	if len(c.Status.Conditions) == 0 {
		d.kv(0, "Conditions", "none yet")
		return
	}
	d.head(0, "Conditions")
	rows := make([][]string, 0, len(c.Status.Conditions))
	for _, cd := range c.Status.Conditions {
		rows = append(rows, []string{cd.Type, string(cd.Status), orDash(cd.Reason), age(cd.LastTransitionTime, now), orDash(cd.Message)})
	}
	d.table(1, []string{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}, rows)
}

func renderRequests(d *describer, c *baov1.OpenBaoCluster) {
	r := c.Status.Requests
	if r == (baov1.RequestsStatus{}) {
		return
	}
	d.head(0, "Requests handled")
	for _, kv := range []struct{ key, val string }{
		{baov1.AnnotationPromote, r.Promote}, {baov1.AnnotationRollback, r.Rollback},
		{baov1.AnnotationRetry, r.Retry}, {baov1.AnnotationBreakGlassAck, r.BreakGlassAck},
		{baov1.AnnotationRestart, r.Restart}, {baov1.AnnotationSnapshot, r.Snapshot},
	} {
		if kv.val != "" {
			d.kv(1, kv.key, "%s", kv.val)
		}
	}
}

// renderFleet shows the maintenance windows, the order after other clusters, and
// the last operation that ended (kubectl bao history has them all).
func renderFleet(d *describer, c *baov1.OpenBaoCluster, now time.Time) {
	u := &c.Spec.Upgrade
	if len(u.Windows) > 0 {
		d.head(0, "Maintenance windows")
		for i, w := range u.Windows {
			d.kv(1, fmt.Sprintf("Window %d", i+1), "%s for %s (%s)", w.Start, w.Duration, orDefault(w.TimeZone, "UTC"))
		}
		end := u.WindowEnd
		if end == "" {
			end = baov1.WindowEndPause
		}
		d.kv(1, "When one closes", "%s (spec.upgrade.windowEnd)", end)
		if ws := c.Status.Window; ws != nil {
			switch {
			case ws.Open && ws.ClosesAt != nil:
				d.kv(1, "Now", "open, closes %s", when(ws.ClosesAt, now))
			case ws.OpensAt != nil:
				d.kv(1, "Now", "closed; the next opens %s", when(ws.OpensAt, now))
			}
		}
	}
	if len(u.After) > 0 {
		d.head(0, "Upgrades after")
		for _, a := range u.After {
			ns := a.Namespace
			if ns == "" {
				ns = c.Namespace
			}
			soak := "0s"
			if a.Soak != nil {
				soak = string(*a.Soak)
			}
			d.kv(1, ns+"/"+a.Name, "soak %s", soak)
		}
		if up := c.Status.Upgrade; up != nil && up.Plan != nil {
			for _, pc := range up.Plan.Prechecks {
				if pc.Name == fleet.PrecheckOrder {
					d.kv(1, "Order", "%s: %s", pc.Result, pc.Message)
				}
			}
		}
	}
	if h := c.Status.History; len(h) > 0 {
		e := h[0]
		ended := "-"
		if e.EndedAt != nil {
			ended = when(e.EndedAt, now)
		}
		d.kv(0, "Last operation", "%s, ended %s (kubectl bao history %s -n %s)", history.Summary(e), ended, c.Name, c.Namespace)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
