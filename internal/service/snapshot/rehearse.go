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
func RehearsalPrecheck(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus) baov1.Precheck {
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
	case Newest(&c.Status) == nil:
		pc.Result, pc.Message = baov1.PrecheckFailed, fmt.Sprintf("spec.upgrade.rehearsal is Required and %s has no verified snapshot to rehearse on: take one (kubectl bao snapshot %s -n %s --wait)",
			c.Name, c.Name, c.Namespace)
	default:
		pc.Message = "the upgrade is rehearsed on a copy restored from the newest snapshot once every other precheck passed"
	}
	return pc
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
	persist := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	wait := func(r *baov1.RehearsalStatus, what string) operation.Plan {
		r.WaitingFor = what
		return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: "rehearsal: " + what}}
	}
	r := up.Rehearsal
	if r == nil || r.TargetVersion != up.TargetVersion {
		newest := Newest(st)
		if newest == nil || newest.SHA256 == "" {
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll,
				WaitingFor: "the rehearsal needs a verified snapshot: kubectl bao snapshot " + c.Name + " --wait"}}
		}
		r = &baov1.RehearsalStatus{ID: operation.ID(c, "rehearsal", s.Now), Cluster: RehearsalClusterName(c), Snapshot: newest.Location, SHA256: newest.SHA256,
			TargetVersion: up.TargetVersion, Step: baov1.RehearsalStepCreate, StartedAt: ptrTime(s.Now), WaitingFor: "creating the copy"}
		up.Rehearsal = r
		return persist.Say(operation.Normal(EventRehearsalStarted, fmt.Sprintf("Rehearsing the upgrade from %s to %s on %s, restored from %s, before %s changes",
			up.FromVersion, up.TargetVersion, r.Cluster, r.Snapshot, c.Name)))
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
		case ch.Status.CurrentVersion == r.TargetVersion && ch.Status.Upgrade == nil:
			took := ""
			if r.StartedAt != nil {
				took = " in " + s.Now.Sub(r.StartedAt.Time).Round(time.Second).String()
			}
			canary := ""
			if ch.Status.Restore != nil {
				canary = canaryWords(ch.Status.Restore.Canary)
			}
			return verdict(baov1.DrillPassed, fmt.Sprintf("%s restored %s%s and upgraded from %s to %s with strategy %s%s",
				r.Cluster, r.Snapshot, canary, up.FromVersion, r.TargetVersion, c.GetStrategy(), took))
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
		if r.Result != nil && r.Result.Outcome == baov1.DrillPassed {
			return persist.Say(operation.Normal(EventRehearsalPassed, "Rehearsal passed: "+r.Result.Message+"; the real upgrade may start"))
		}
		msg := "the rehearsal ended without a verdict"
		if r.Result != nil {
			msg = r.Result.Message
		}
		return persist.Say(operation.Warning(EventRehearsalFailed, fmt.Sprintf("Rehearsal of the upgrade to %s failed: %s. The real upgrade is held (precheck %s)",
			r.TargetVersion, msg, PrecheckRehearsal)))
	}
	return operation.Nothing()
}

// RehearsalCluster is the copy of the rehearsal in progress: the cluster's spec at
// the version its members run, with spec.bootstrap.fromSnapshot naming the newest
// receipt and this cluster as its source, no snapshots or drills of its own. It is
// owned by the cluster and labelled with the rehearsal.
func RehearsalCluster(c *baov1.OpenBaoCluster) (*baov1.OpenBaoCluster, error) {
	up := c.Status.Upgrade
	if up == nil || up.Rehearsal == nil {
		return nil, fmt.Errorf("no rehearsal runs on %s/%s", c.Namespace, c.Name)
	}
	r := up.Rehearsal
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
	d.Spec.Version, d.Spec.Image = up.FromVersion, ""
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
