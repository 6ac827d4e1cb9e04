package snapshot

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Event reasons of rehearsals.
const (
	EventRehearsalStarted baov1.Reason = "RehearsalStarted"
	EventRehearsalPassed  baov1.Reason = "RehearsalPassed"
	EventRehearsalFailed  baov1.Reason = "RehearsalFailed"
)

// Labels of a rehearsal's copy.
const (
	// LabelRehearsalOf names the cluster a copy rehearses an upgrade of.
	LabelRehearsalOf = "baokeeper.dev/rehearsal-of"
	// LabelRehearsalID is the rehearsal's ID.
	LabelRehearsalID = "baokeeper.dev/rehearsal-id"
)

// PrecheckRehearsal is the precheck that holds an upgrade until its rehearsal
// passed (spec.upgrade.rehearsal: Required).
const PrecheckRehearsal = "Rehearsal"

// RehearsalClusterName is the copy's name: <name>-rehearsal, shortened with a hash
// when longer than a cluster name may be (40).
func RehearsalClusterName(c *baov1.OpenBaoCluster) string {
	return executorjob.BoundedNameN(c.Name+"-rehearsal", 40)
}

// RehearsalRequired reports whether the upgrade in st must be rehearsed first: the
// spec asks for it and the upgrade changes the version (a rollout changes no data).
func RehearsalRequired(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus) bool {
	return c.Spec.Upgrade.Rehearsal == baov1.RehearsalRequired && up != nil && up.Kind != baov1.OperationRollout
}

// RehearsalPrecheck is the Rehearsal precheck as the rehearsal stands: Passed once
// it passed for this target, Failed with its failure (or without a snapshot to
// rehearse from), Pending while it runs or waits for the other prechecks.
func RehearsalPrecheck(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus, now time.Time) baov1.Precheck {
	pc := baov1.Precheck{Name: PrecheckRehearsal, Result: baov1.PrecheckPending}
	r := up.Rehearsal
	switch {
	case r != nil && r.TargetVersion == up.TargetVersion && r.Step == baov1.RehearsalStepDone && r.Result != nil && r.Result.Outcome == baov1.DrillPassed:
		pc.Result, pc.Message = baov1.PrecheckPassed, fmt.Sprintf("rehearsed on %s from %s: %s", r.Cluster, r.Snapshot, r.Result.Message)
	case r != nil && r.TargetVersion == up.TargetVersion && r.Step == baov1.RehearsalStepDone:
		msg := "the rehearsal ended without a verdict"
		if r.Result != nil {
			msg = r.Result.Message
		}
		pc.Result, pc.Message = baov1.PrecheckFailed, fmt.Sprintf("the rehearsal on %s failed: %s. Nothing of %s changed; fix the cause, then set %s to rehearse again (kubectl bao retry %s -n %s)",
			r.Cluster, msg, c.Name, baov1.AnnotationRetry, c.Name, c.Namespace)
	case r != nil && r.TargetVersion == up.TargetVersion:
		pc.Message = fmt.Sprintf("rehearsing the upgrade to %s on %s (step %s): %s", r.TargetVersion, r.Cluster, r.Step, r.WaitingFor)
	case requestedPassed(c, up, now) != nil:
		q := requestedPassed(c, up, now)
		pc.Result, pc.Message = baov1.PrecheckPassed, fmt.Sprintf("rehearsed on request (%s=%s, finished %s) on %s from %s: %s",
			baov1.AnnotationRehearse, q.Request, q.Result.FinishedAt.UTC().Format(time.RFC3339), q.Cluster, q.Snapshot, q.Result.Message)
	case Newest(&c.Status) == nil:
		pc.Result, pc.Message = baov1.PrecheckFailed, fmt.Sprintf("spec.upgrade.rehearsal is Required and %s has no verified snapshot to rehearse on: take one (kubectl bao snapshot %s -n %s --wait)",
			c.Name, c.Name, c.Namespace)
	default:
		pc.Message = "the upgrade is rehearsed on a copy restored from the newest snapshot once every other precheck passed"
	}
	return pc
}

// requestedPassed is the requested rehearsal (status.rehearsal) that stands for
// the upgrade up: it passed, from the same version to the same target, and
// finished within RehearsalValidFor. nil when there is none.
func requestedPassed(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus, now time.Time) *baov1.RehearsalStatus {
	q := c.Status.Rehearsal
	if q == nil || q.Step != baov1.RehearsalStepDone || q.Result == nil || q.Result.Outcome != baov1.DrillPassed || q.Result.FinishedAt == nil {
		return nil
	}
	if !sameVersion(q.FromVersion, up.FromVersion) || !sameVersion(q.TargetVersion, up.TargetVersion) {
		return nil
	}
	if q.Result.FinishedAt.Add(baov1.RehearsalValidFor).Before(now) {
		return nil
	}
	return q
}

// Rehearse is the rehearsal's next step, once every other precheck of the upgrade
// in st passed: create the copy from the newest receipt, let it restore and grow,
// set its version to the target (its own upgrade runs, with the same strategy and
// gates), read the verdict, delete the copy. Each step is in
// status.upgrade.rehearsal before it is taken. Nothing of the cluster itself
// changes.
func Rehearse(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus) operation.Plan {
	c := s.Object
	up := st.Upgrade
	r := up.Rehearsal
	if r == nil || r.TargetVersion != up.TargetVersion {
		newest := Newest(st)
		if newest == nil || newest.SHA256 == "" {
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll,
				WaitingFor: "the rehearsal needs a verified snapshot: kubectl bao snapshot " + c.Name + " --wait"}}
		}
		up.Rehearsal = startRehearsal(c, &baov1.RehearsalStatus{FromVersion: up.FromVersion, TargetVersion: up.TargetVersion}, newest, s.Now)
		return rehearsalStarted(c, up.Rehearsal, st)
	}
	return rehearseStep(s, st, r)
}

// startRehearsal fills r (its versions set) for a rehearsal that starts now from
// the receipt newest.
func startRehearsal(c *baov1.OpenBaoCluster, r *baov1.RehearsalStatus, newest *baov1.SnapshotReceipt, now time.Time) *baov1.RehearsalStatus {
	r.ID, r.Cluster, r.Snapshot, r.SHA256 = operation.ID(c, "rehearsal", now), RehearsalClusterName(c), newest.Location, newest.SHA256
	r.Step, r.StartedAt, r.WaitingFor, r.Result = baov1.RehearsalStepCreate, ptrTime(now), "creating the copy", nil
	return r
}

// rehearsalStarted persists a rehearsal that starts, and says so.
func rehearsalStarted(c *baov1.OpenBaoCluster, r *baov1.RehearsalStatus, st *baov1.OpenBaoClusterStatus) operation.Plan {
	return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}.Say(
		operation.Normal(EventRehearsalStarted, fmt.Sprintf("Rehearsing the upgrade from %s to %s on %s, restored from %s, before %s changes",
			r.FromVersion, r.TargetVersion, r.Cluster, r.Snapshot, c.Name)))
}

// rehearsalFrom is the version a rehearsal's copy starts at: r.FromVersion, or for
// a rehearsal recorded before that field existed, the upgrade's.
func rehearsalFrom(st *baov1.OpenBaoClusterStatus, r *baov1.RehearsalStatus) string {
	if r.FromVersion == "" && st.Upgrade != nil {
		return st.Upgrade.FromVersion
	}
	return r.FromVersion
}

// rehearseStep is the next step of the rehearsal r that started (status.upgrade's
// or a requested one), each persisted before it is taken: the copy restores and
// grows, upgrades to the target, reads the canary back, and is deleted.
func rehearseStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RehearsalStatus) operation.Plan {
	c := s.Object
	from := rehearsalFrom(st, r)
	persist := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	wait := func(r *baov1.RehearsalStatus, what string) operation.Plan {
		r.WaitingFor = what
		return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: "rehearsal: " + what}}
	}
	ch := s.Rehearsal
	verdict := func(outcome baov1.DrillOutcome, msg string) operation.Plan {
		r.Result = &baov1.DrillResult{ID: r.ID, Cluster: r.Cluster, Snapshot: r.Snapshot, Outcome: outcome, StartedAt: r.StartedAt, FinishedAt: ptrTime(s.Now), Message: msg}
		if ch != nil && ch.Status.Restore != nil {
			r.Result.RaftIndex = ch.Status.Restore.RaftIndex
		}
		r.Step, r.WaitingFor = baov1.RehearsalStepDelete, "deleting the copy"
		return persist
	}
	timedOut := r.StartedAt != nil && s.Now.Sub(r.StartedAt.Time) > c.RehearsalTimeout()
	switch r.Step {
	case baov1.RehearsalStepCreate:
		switch {
		case ch == nil:
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindApply, Object: operation.ObjectRehearsalCluster,
				WaitingFor: "rehearsal: creating " + r.Cluster}}
		case ch.Labels[LabelRehearsalID] != r.ID:
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectRehearsalCluster,
				WaitingFor: "rehearsal: deleting " + ch.Name + " of an earlier rehearsal"}}
		}
		r.Step, r.WaitingFor = baov1.RehearsalStepRestore, "the copy restores "+r.Snapshot
		return persist
	case baov1.RehearsalStepRestore:
		switch {
		case ch == nil:
			return verdict(baov1.DrillFailed, r.Cluster+" is gone before its restore ended (deleted by hand?)")
		case ch.Status.Restore != nil && ch.Status.Restore.Step == baov1.RestoreStepFailed:
			return verdict(baov1.DrillFailed, "the copy did not restore: "+ch.Status.Restore.Failure)
		case ch.Restored() && ch.Status.Phase == baov1.PhaseRunning && ch.Status.CurrentVersion != "":
			r.Step, r.WaitingFor = baov1.RehearsalStepUpgrade, "upgrading the copy to "+r.TargetVersion
			return persist
		case timedOut:
			return verdict(baov1.DrillFailed, fmt.Sprintf("the copy did not restore and grow within %s (spec.upgrade.rehearsalTimeout): %s", c.RehearsalTimeout(), ch.Status.Message))
		}
		return wait(r, "the copy restores and grows: "+ch.Status.Message)
	case baov1.RehearsalStepUpgrade:
		switch {
		case ch == nil:
			return verdict(baov1.DrillFailed, r.Cluster+" is gone before its upgrade ended (deleted by hand?)")
		case strings.TrimPrefix(ch.Spec.Version, "v") != strings.TrimPrefix(r.TargetVersion, "v"):
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindApply, Object: operation.ObjectRehearsalVersion,
				WaitingFor: "rehearsal: setting the copy's spec.version to " + r.TargetVersion}}
		case upgradedCopy(ch, r):
			want := canaryOf(st, r.SHA256)
			ok, why, wrong := canaryVerdict(want, s.RehearsalCanary)
			switch {
			case wrong:
				return verdict(baov1.DrillFailed, fmt.Sprintf("the copy reached %s, but after its upgrade %s", r.TargetVersion, why))
			case !ok && timedOut:
				return verdict(baov1.DrillFailed, fmt.Sprintf("the copy reached %s, but within %s (spec.upgrade.rehearsalTimeout) %s", r.TargetVersion, c.RehearsalTimeout(), why))
			case !ok:
				return wait(r, "the copy reached "+r.TargetVersion+"; "+why)
			}
			took := ""
			if r.StartedAt != nil {
				took = " in " + s.Now.Sub(r.StartedAt.Time).Round(time.Second).String()
			}
			canary := ""
			if ch.Status.Restore != nil {
				canary = canaryWords(ch.Status.Restore.Canary)
			}
			after := ""
			if want != "" {
				after = fmt.Sprintf(", the restore canary %q read back again after the upgrade", want)
			}
			return verdict(baov1.DrillPassed, fmt.Sprintf("%s restored %s%s and upgraded from %s to %s with strategy %s%s%s",
				r.Cluster, r.Snapshot, canary, from, r.TargetVersion, c.GetStrategy(), took, after))
		case ch.Status.Upgrade != nil && ch.Status.Upgrade.Failure != nil:
			return verdict(baov1.DrillFailed, fmt.Sprintf("the copy's upgrade failed (%s): %s", ch.Status.Upgrade.Failure.Reason, ch.Status.Upgrade.Failure.Message))
		case ch.Status.BreakGlass != nil && ch.Status.BreakGlass.Active:
			return verdict(baov1.DrillFailed, fmt.Sprintf("the copy's upgrade entered break-glass (%s): %s", ch.Status.BreakGlass.Reason, ch.Status.BreakGlass.Message))
		case timedOut:
			return verdict(baov1.DrillFailed, fmt.Sprintf("the copy did not reach %s within %s (spec.upgrade.rehearsalTimeout): %s", r.TargetVersion, c.RehearsalTimeout(), ch.Status.Message))
		}
		return wait(r, "the copy upgrades: "+ch.Status.Message)
	case baov1.RehearsalStepDelete:
		if ch != nil {
			return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectRehearsalCluster,
				WaitingFor: "rehearsal: deleting " + r.Cluster + " and its volumes"}}
		}
		r.Step, r.WaitingFor = baov1.RehearsalStepDone, ""
		passed := r.Result != nil && r.Result.Outcome == baov1.DrillPassed
		msg := "the rehearsal ended without a verdict"
		if r.Result != nil {
			msg = r.Result.Message
		}
		switch {
		case passed && r.Request != "":
			return persist.Say(operation.Normal(EventRehearsalPassed, fmt.Sprintf("Rehearsal passed (%s=%s): %s; an upgrade from %s to %s within %s counts it",
				baov1.AnnotationRehearse, r.Request, msg, from, r.TargetVersion, baov1.RehearsalValidFor)))
		case passed:
			return persist.Say(operation.Normal(EventRehearsalPassed, "Rehearsal passed: "+msg+"; the real upgrade may start"))
		case r.Request != "":
			return persist.Say(operation.Warning(EventRehearsalFailed, fmt.Sprintf("Rehearsal of the upgrade to %s failed (%s=%s): %s. Nothing of %s changed",
				r.TargetVersion, baov1.AnnotationRehearse, r.Request, msg, c.Name)))
		}
		return persist.Say(operation.Warning(EventRehearsalFailed, fmt.Sprintf("Rehearsal of the upgrade to %s failed: %s. The real upgrade is held (precheck %s)",
			r.TargetVersion, msg, PrecheckRehearsal)))
	}
	return operation.Nothing()
}

// upgradedCopy reports whether the rehearsal's copy runs its target with no
// upgrade of its own left.
func upgradedCopy(ch *baov1.OpenBaoCluster, r *baov1.RehearsalStatus) bool {
	return ch != nil && ch.Status.CurrentVersion == r.TargetVersion && ch.Status.Upgrade == nil
}

// RehearsalCanaryWanted is the canary value the controller must read on the
// rehearsal's copy ch this pass: the one the rehearsed snapshot's receipt
// records, once the copy runs the target version. The copy's own restore checked
// it before the upgrade; reading it again after shows that the upgraded version
// still reads the restored data. "" when nothing is to be read (no rehearsal at
// that step, or a snapshot taken without a canary).
func RehearsalCanaryWanted(c, ch *baov1.OpenBaoCluster) string {
	r := ActiveRehearsal(&c.Status)
	if r == nil || r.Step != baov1.RehearsalStepUpgrade || !upgradedCopy(ch, r) {
		return ""
	}
	return canaryOf(&c.Status, r.SHA256)
}

// ActiveRehearsal is the rehearsal whose copy may exist: the upgrade's
// (status.upgrade.rehearsal) or, without one, a requested one (status.rehearsal)
// that started. nil when neither.
func ActiveRehearsal(st *baov1.OpenBaoClusterStatus) *baov1.RehearsalStatus {
	if up := st.Upgrade; up != nil && up.Rehearsal != nil {
		return up.Rehearsal
	}
	if r := st.Rehearsal; r != nil && r.ID != "" {
		return r
	}
	return nil
}

// RehearsalCluster is the copy of the rehearsal in progress: the cluster's spec at
// the version its members run, with spec.bootstrap.fromSnapshot naming the newest
// receipt and this cluster as its source, no snapshots or drills of its own. It is
// owned by the cluster and labelled with the rehearsal.
func RehearsalCluster(c *baov1.OpenBaoCluster) (*baov1.OpenBaoCluster, error) {
	r := ActiveRehearsal(&c.Status)
	if r == nil {
		return nil, fmt.Errorf("no rehearsal runs on %s/%s", c.Namespace, c.Name)
	}
	target, key, err := TargetFor(c, r.Snapshot)
	if err != nil {
		return nil, err
	}
	d := &baov1.OpenBaoCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: baov1.GroupVersion.String(), Kind: "OpenBaoCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Cluster, Namespace: c.Namespace,
			Labels:          map[string]string{LabelRehearsalOf: c.Name, LabelRehearsalID: r.ID},
			Annotations:     map[string]string{"baokeeper.dev/note": "Rehearsal of the upgrade of " + c.Name + " to " + r.TargetVersion + ": deleted by baokeeper when the rehearsal ends."},
			OwnerReferences: []metav1.OwnerReference{workload.OwnerReference(c)}},
		Spec: *c.Spec.DeepCopy(),
	}
	// The version the members run, with the image they run when spec.image pins one
	// for the target: the copy's own upgrade changes it.
	d.Spec.Version, d.Spec.Image = rehearsalFrom(&c.Status, r), ""
	if r.Request != "" {
		// No upgrade: spec.version is the version the members run, and spec.image
		// (when set) the image they run.
		d.Spec.Image = c.Spec.Image
	}
	d.Spec.Snapshots = baov1.SnapshotsSpec{}
	d.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever}
	d.Spec.Upgrade.Rehearsal = baov1.RehearsalDisabled
	src := baov1.SnapshotSource{S3: *target, Key: key, SHA256: r.SHA256, SourceCluster: c.Name, Canary: canaryOf(&c.Status, r.SHA256)}
	if c.GetSealType() == baov1.StaticSeal {
		src.SealKeySecretRef = &corev1.LocalObjectReference{Name: workload.NamesFor(c).SealSecret()}
	}
	d.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: src}
	return d, nil
}
