package adminops

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/rolling"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// startOperation plans a version change when spec.version (or spec.image) differs
// from what runs and the policy allows it, or a rollout when members are off the
// current pod template. The plan and its prechecks are persisted first; nothing is
// touched until a later pass finds every precheck passed.
type startOperation struct{}

func (startOperation) Name() string { return "Plan" }

// startKind is what the planner would start over a snapshot: a version change
// (or an image change at the same version), a rollout, or nothing ("").
func startKind(s *operation.Snapshot) baov1.OperationKind {
	c := s.Object
	cur := c.Status.CurrentVersion
	if c.Status.Upgrade != nil || cur == "" || upgrade.LockOfStrategy(c.GetStrategy()) == "" {
		return ""
	}
	targetImage := upgrade.ResolveImage(c.Spec.Image, c.Spec.Version)
	imageOnly := upgrade.SameVersion(c.Spec.Version, cur)
	if imageOnly && !upgrade.ImageChanged(s.Cluster, targetImage) {
		if len(s.OffTemplate()) > 0 {
			return baov1.OperationRollout
		}
		return ""
	}
	d := upgrade.EvaluateVersion(upgrade.VersionRequest{Desired: c.Spec.Version, Image: c.Spec.Image, CurrentVersion: cur})
	if !d.Allowed || (!d.IsUpgrade && !imageOnly) {
		return ""
	}
	if lr := c.Status.LastRollback; lr != nil && lr.Retry == "" && upgrade.SameVersion(trimV(c.Spec.Version), lr.TargetVersion) {
		// Rolled back: not again on its own. The RolledBack condition says what to do.
		return ""
	}
	if imageOnly {
		return baov1.OperationImage
	}
	return baov1.OperationVersion
}

func (startOperation) Decide(s *operation.Snapshot) operation.Plan {
	switch startKind(s) {
	case baov1.OperationRollout:
		return startRollout(s)
	case baov1.OperationVersion:
		return startUpgrade(s, false)
	case baov1.OperationImage:
		return startUpgrade(s, true)
	}
	return certificateFallback(s)
}

// certificateFallback restarts the members through the rollout when one did not
// reload a new serving certificate within its grace (upgrade.CheckServedCertificates):
// a restart token of the certificate's own goes to status.restart, as a person's
// restart request would, and the workload loop sets it on the pod template. Until
// the grace runs out, it only wakes the loop when it does.
func certificateFallback(s *operation.Snapshot) operation.Plan {
	st := s.Status()
	if st.BreakGlass != nil && st.BreakGlass.Active {
		return operation.Nothing()
	}
	chk := upgrade.CheckServedCertificates(st, s.Now)
	switch {
	case chk.Restart:
		t := metav1.NewTime(s.Now)
		st.Restart = &baov1.RestartRecord{Token: chk.Token, RequestedAt: &t}
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist},
			Events: []operation.Event{operation.Warning(upgrade.EventCertificateNotReloaded, chk.Message)}}
	case chk.Wait > 0:
		p := operation.Nothing()
		p.RequeueAfter = chk.Wait
		return p
	}
	return operation.Nothing()
}

// startUpgrade plans a version change (or an image change at the same version).
func startUpgrade(s *operation.Snapshot, imageOnly bool) operation.Plan {
	c := s.Object
	st := s.Status()
	cur, strategy := st.CurrentVersion, c.GetStrategy()
	if strategy == baov1.OfflineStrategy && imageOnly {
		// A new image at the same version shares the cluster with the old one: no
		// reason to stop every member.
		strategy = baov1.RollingUpdateStrategy
	}
	targetImage := upgrade.ResolveImage(c.Spec.Image, c.Spec.Version)
	target := trimV(c.Spec.Version)
	k := baov1.OperationVersion
	if imageOnly {
		k = baov1.OperationImage
	}
	pcs, _, _ := prechecks(s, st, strategy, k, cur, target)
	id := operation.ID(c, "upgrade-to-"+target+"-"+targetImage, s.Now)
	pods := rolling.Plan(s.Cluster)
	undo := upgrade.UndoInput{Name: c.Name, Namespace: c.Namespace, Strategy: strategy, From: cur, ImageOnly: imageOnly,
		RunningImage: upgrade.RunningImage(s.Cluster), Blue: c.ServingStatefulSet()}
	if strategy == baov1.BlueGreenStrategy {
		green := workload.NamesFor(c).ForStatefulSet(workload.NamesFor(c).GreenStatefulSet(id))
		pods = nil
		for i := range c.GetReplicas() {
			pods = append(pods, green.Member(i))
		}
		undo.Green = green.StatefulSet()
	}
	st.LastRollback = nil
	st.Upgrade = &baov1.UpgradeStatus{
		Kind:     k,
		Strategy: strategy, FromVersion: cur, TargetVersion: target,
		TargetImage: targetImage, StartedAt: ptr(metav1.NewTime(s.Now)),
		ID: id,
		Plan: &baov1.UpgradePlan{
			Pods:             pods,
			Prechecks:        pcs,
			SnapshotLocation: upgrade.SnapshotLocation(c.Spec.Upgrade.PreUpgradeSnapshot),
			UndoPath:         upgrade.UndoPath(undo),
		},
	}
	what := fmt.Sprintf("from %s to %s", cur, target)
	if imageOnly {
		what = fmt.Sprintf("to image %s at the same version %s (from %s)", targetImage, cur, upgrade.RunningImage(s.Cluster))
	}
	ev := operation.Normal(upgrade.EventPlanned, fmt.Sprintf("Upgrading %s (%s) in the order %v", what, strategyWord(strategy), pods))
	if failed := upgrade.FirstFailedPrecheck(pcs); failed != nil {
		ev = operation.Warning(upgrade.EventBlocked, fmt.Sprintf("Upgrade %s waits for precheck %s: %s", what, failed.Name, failed.Message))
	}
	return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist}, Events: []operation.Event{ev}}
}

// startRollout plans a rollout of the pod template: the members off the current
// template restart one at a time through the rolling machinery, on the version and
// image they run, followers first and the leader last. A rollout is always rolling
// (a blue-green upgrade would copy the data for a restart) and takes no snapshot (no
// data changes).
func startRollout(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	cur, image := st.CurrentVersion, upgrade.RunningImage(s.Cluster)
	changes := s.TemplateChanges()
	pcs, _, _ := prechecks(s, st, baov1.RollingUpdateStrategy, baov1.OperationRollout, cur, cur)
	id := operation.ID(c, "rollout-"+s.UpdateRevision(), s.Now)
	pods := onlyOff(rolling.Plan(s.Cluster), s.OffTemplate())
	st.Upgrade = &baov1.UpgradeStatus{
		Kind: baov1.OperationRollout, Changes: changes,
		Strategy: baov1.RollingUpdateStrategy, FromVersion: cur, TargetVersion: cur,
		TargetImage: image, StartedAt: ptr(metav1.NewTime(s.Now)),
		ID: id,
		Plan: &baov1.UpgradePlan{
			Pods:      pods,
			Prechecks: pcs,
			UndoPath: fmt.Sprintf("a rollout changes no version and no data: to undo it, set back what changed in the spec (%s); "+
				"the rollout then restarts the members onto that template, the same way", changes),
		},
	}
	ev := operation.Normal(upgrade.EventRolloutPlanned, fmt.Sprintf("Restarting %v on the new pod template (%s), one at a time, the leader last", pods, changes))
	if failed := upgrade.FirstFailedPrecheck(pcs); failed != nil {
		ev = operation.Warning(upgrade.EventBlocked, fmt.Sprintf("Rollout of the pod template (%s) waits for precheck %s: %s", changes, failed.Name, failed.Message))
	}
	return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist}, Events: []operation.Event{ev}}
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}
