package adminops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/rolling"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// UpgradeFieldManager is the field manager of the upgrade manager's writes to the
// StatefulSet (the pod template's image).
const UpgradeFieldManager = "baokeeper-upgrade"

// openbaoPollInterval is how often a running upgrade that waits on OpenBao itself
// (autopilot after an election, a member catching up) looks again: OpenBao's state
// has no watch. Only clusters with an upgrade in progress are polled.
const openbaoPollInterval = 2 * time.Second

// upgradePoll is how often an upgrade in progress looks again while a gate waits on
// OpenBao or on a pod: each pass reads every member's sys/health and autopilot state
// once (members + 1 requests), so one cluster costs at most 2 × (members + 1)
// requests per second while its upgrade waits, and nothing more once it is done.
const upgradePoll = 500 * time.Millisecond

// persistRequeue is how soon a pass that only recorded an intent runs again: the
// status write of our own does not trigger a pass, and the action waits for it.
const persistRequeue = 200 * time.Millisecond

// Event reasons of upgrades.
const (
	eventUpgradePlanned   baov1.Reason = "UpgradePlanned"
	eventUpgradeBlocked   baov1.Reason = "UpgradeBlocked"
	eventUpgradeStep      baov1.Reason = "UpgradeStep"
	eventUpgradeFailed    baov1.Reason = "UpgradeFailed"
	eventUpgradeCompleted baov1.Reason = "UpgradeCompleted"
	eventUpgradeCancelled baov1.Reason = "UpgradeCancelled"
	eventVersionDeferred  baov1.Reason = "VersionChangeDeferred"
	eventRolloutPlanned   baov1.Reason = "RolloutPlanned"
)

// reconcileUpgrade starts a version change when spec.version moved past what runs,
// and drives a running one through the rolling state machine, one action per pass.
func (r *Reconciler) reconcileUpgrade(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (ctrl.Result, error) {
	up := c.Status.Upgrade
	if up == nil {
		if res, acted, err := r.recreateNeverStarted(ctx, c, obs); acted || err != nil {
			return res, err
		}
		return r.maybeStart(ctx, c, obs), nil
	}
	op := operationFor(up)
	if op == "" {
		// The API's enum admits no other strategy; an object stored by a future
		// release is left alone rather than guessed at.
		ctrl.LoggerFrom(ctx).Info("Ignoring an upgrade of an unknown strategy", "strategy", string(up.Strategy))
		return ctrl.Result{}, nil
	}
	blueGreen := up.Strategy == baov1.BlueGreenStrategy
	rt := upgrade.DecideRetarget(up, obs, c.Spec.Version, upgrade.ResolveImage(c.Spec.Image, c.Spec.Version))
	if blueGreen && rt.Cancel && c.Status.BlueGreen != nil {
		// Green may exist: the upgrade finishes first (a rollback is the way back).
		rt = upgrade.Retarget{Message: fmt.Sprintf("spec.version changed to %s during the blue-green upgrade to %s after green was started: "+
			"the upgrade finishes to %s first, then %s is planned", trimV(c.Spec.Version), up.TargetVersion, up.TargetVersion, trimV(c.Spec.Version))}
	}
	switch {
	case rt.Cancel:
		return r.cancelUpgrade(ctx, c, rt)
	case rt.Message != "" && up.DeferredVersion != trimV(c.Spec.Version):
		// Said once per new value, in an event and in status (the phase message
		// carries it until the upgrade ends).
		ctrl.LoggerFrom(ctx).Info("spec.version changed during the upgrade; finishing it first", "reason", rt.Message)
		up.DeferredVersion = trimV(c.Spec.Version)
		r.event(c, corev1.EventTypeWarning, eventVersionDeferred, rt.Message)
	case rt.Message == "":
		up.DeferredVersion = ""
	}
	notStarted := up.CurrentStep == nil && len(up.CompletedPods) == 0 && up.Snapshot == nil
	if blueGreen {
		notStarted = c.Status.BlueGreen == nil && up.Snapshot == nil
	}
	if notStarted {
		// Not started yet: the prechecks are evaluated again until they all pass.
		up.Plan.Prechecks = r.prechecks(ctx, c, obs, up.Strategy, up.Kind, up.FromVersion, up.TargetVersion)
		if failed := upgrade.FirstFailedPrecheck(up.Plan.Prechecks); failed != nil {
			// Autopilot health has no watch: look again while the upgrade waits.
			return ctrl.Result{RequeueAfter: openbaoPollInterval}, nil
		}
	}
	// The lock goes out in the same status write as the first intent, before any Job
	// or change to the cluster. The precheck above saw it free (or ours).
	if err := operation.Acquire(&c.Status, op, operation.HolderUpgradeManager,
		fmt.Sprintf("%s upgrade from %s to %s", strategyWord(up.Strategy), up.FromVersion, up.TargetVersion), obs.Now); err != nil {
		return ctrl.Result{RequeueAfter: openbaoPollInterval}, nil
	}
	if res, stop, err := r.watchQuorum(ctx, c, obs); stop || err != nil {
		return res, err
	}
	if snapshot.Needed(c.Spec.Upgrade.PreUpgradeSnapshot, up) {
		// Invariant: nothing of the cluster changes, not even the pod template,
		// before the snapshot's receipt is recorded.
		return r.reconcileSnapshot(ctx, c, obs)
	}
	if blueGreen {
		return r.reconcileBlueGreen(ctx, c, obs)
	}
	return r.reconcileRolling(ctx, c, obs)
}

// operationFor is the operation lock of an upgrade in progress: a rollout's own, or
// its strategy's.
func operationFor(up *baov1.UpgradeStatus) string {
	if up.Kind == baov1.OperationRollout {
		return operation.OperationRollout
	}
	return operationOf(up.Strategy)
}

// operationOf is the operation lock of a strategy's upgrade; "" for none known.
func operationOf(s baov1.UpgradeStrategyType) string {
	switch s {
	case baov1.RollingUpdateStrategy:
		return operation.OperationRollingUpgrade
	case baov1.BlueGreenStrategy:
		return operation.OperationBlueGreenUpgrade
	}
	return ""
}

func strategyWord(s baov1.UpgradeStrategyType) string {
	if s == baov1.BlueGreenStrategy {
		return "blue-green"
	}
	return "rolling"
}

// reconcileRolling drives a rolling upgrade whose snapshot is taken, one action per
// pass.
func (r *Reconciler) reconcileRolling(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (ctrl.Result, error) {
	up := c.Status.Upgrade
	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).StatefulSet()}, sts); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get the StatefulSet of %s/%s: %w", c.Namespace, c.Name, err)
	}
	in := rolling.Input{
		Upgrade: up, Cluster: obs, TargetImage: up.TargetImage, TargetVersion: up.TargetVersion,
		TemplateImage: workload.ContainerImage(&sts.Spec.Template.Spec), Paused: c.Spec.Upgrade.Paused,
		StepTimeout:   c.GetStepTimeout(),
		SettleTime:    c.GetSettleTime(),
		MaxLag:        uint64(valueOr(c.Spec.Upgrade.Rolling.MaxLagEntries, 1000)),
		LeaderHandoff: c.GetLeaderHandoff(),
	}
	if up.CurrentStep != nil && up.CurrentStep.Action == rolling.StepTransferLeadership && up.CurrentStep.Attempts > 0 {
		job, _, err := r.observeJob(ctx, c, stepDownJobName(c, up), up.ID, obs.Now)
		if err != nil {
			return ctrl.Result{}, err
		}
		in.StepDownJob = job
	}
	in.CanPromote = up.ID != ""
	if st := up.CurrentStep; st != nil && st.Action == rolling.StepReplaceMember && st.Attempts > 0 && up.ID != "" {
		job, _, err := r.observeJob(ctx, c, executorjob.JobName(c, executorjob.StepPromote, up.ID, st.Pod, st.Attempts), up.ID, obs.Now)
		if err != nil {
			return ctrl.Result{}, err
		}
		in.PromoteJob = job
	}

	d := rolling.Decide(in)
	rolling.Record(up, d, obs, up.TargetImage, c.GetLeaderHandoff())
	up.Progress = rollingProgress(up)
	a := rolling.ToAction(d, up.TargetImage, up.TargetVersion)
	if up.Kind == baov1.OperationRollout {
		a = rolloutWords(a, d)
	}
	return r.execute(ctx, c, obs, a, strategyHooks{
		poll: upgradePoll,
		job: func(a operation.Action) (*batchv1.Job, error) {
			switch a.Job {
			case operation.JobStepDown:
				return stepDownJob(c, up, r.executorImage(c)), nil
			case operation.JobPromote:
				return executorjob.PromoteJob(c, up.ID, a.Member, up.CurrentStep.Attempts, r.executorImage(c), executorjob.MemberAddresses(c)), nil
			}
			return nil, fmt.Errorf("a rolling upgrade has no executor Job %q", a.Job)
		},
	})
}

// rolloutWords says what a rolling step does for a rollout, which restarts members
// on what they run: no member is "upgraded" or "replaced with" an image.
func rolloutWords(a operation.Action, d rolling.Decision) operation.Action {
	switch d.Action {
	case rolling.ActionDeletePod:
		a.Event = fmt.Sprintf("Restarting %s on the new pod template", d.Pod)
	case rolling.ActionCompleteMember:
		a.Event = fmt.Sprintf("%s runs the new pod template", d.Pod)
	}
	return a
}

// rollingProgress is the strategy-neutral progress of a rolling upgrade: members
// replaced of the plan's.
func rollingProgress(up *baov1.UpgradeStatus) *baov1.UpgradeProgress {
	p := &baov1.UpgradeProgress{Stage: "Start", Completed: int32(len(up.CompletedPods))}
	if up.Plan != nil {
		p.Total = int32(len(up.Plan.Pods))
	}
	if st := up.CurrentStep; st != nil && st.Action != "" {
		p.Stage = string(st.Action)
	}
	return p
}

// cancelUpgrade drops an upgrade that touched no member: first the pod template is
// set back to the image every member runs (so no pod restarts on the abandoned
// target), then, in a later pass, status.upgrade is cleared. A new spec.version is
// planned by the pass after that, like any other.
func (r *Reconciler) cancelUpgrade(ctx context.Context, c *baov1.OpenBaoCluster, rt upgrade.Retarget) (ctrl.Result, error) {
	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).StatefulSet()}, sts); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get the StatefulSet of %s/%s: %w", c.Namespace, c.Name, err)
	}
	if workload.ContainerImage(&sts.Spec.Template.Spec) != rt.FromImage {
		ctrl.LoggerFrom(ctx).Info("Setting the pod template back before cancelling the upgrade", "image", rt.FromImage)
		if err := r.applyTemplateImage(ctx, sts, rt.FromImage); err != nil {
			return ctrl.Result{}, err
		}
		c.Status.Upgrade.WaitingFor = "cancelling: setting the pod template back to " + rt.FromImage
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	}
	r.event(c, corev1.EventTypeNormal, eventUpgradeCancelled, rt.Message)
	c.Status.Upgrade = nil
	operation.Release(&c.Status, operation.OperationRollingUpgrade)
	operation.Release(&c.Status, operation.OperationBlueGreenUpgrade)
	operation.Release(&c.Status, operation.OperationRollout)
	return ctrl.Result{RequeueAfter: persistRequeue}, nil
}

// recreateNeverStarted deletes, while no operation runs, the pods of members that
// never started on an image or template that is no longer the StatefulSet's: a
// target image that could not be pulled, left behind by a cancelled upgrade (the
// template is back on what the cluster ran). Such a member serves nothing, and its
// data was never opened on that image; with OnDelete nothing else would re-create it,
// and every later operation would wait for it to become Ready. It comes back on the
// current template.
func (r *Reconciler) recreateNeverStarted(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (ctrl.Result, bool, error) {
	if obs.StatefulSet == nil {
		return ctrl.Result{}, false, nil
	}
	image := workload.ContainerImage(&obs.StatefulSet.Spec.Template.Spec)
	stale := obs.StaleNeverStarted(image)
	if len(stale) == 0 {
		return ctrl.Result{}, false, nil
	}
	for _, m := range stale {
		if err := r.deletePod(ctx, c, obs, m.Name); err != nil {
			return ctrl.Result{}, true, err
		}
		r.event(c, corev1.EventTypeNormal, eventUpgradeStep, fmt.Sprintf("Re-creating %s on %s: its pod never started on %s (%s)", m.Name, image, m.Image, orNothing(m.Problem)))
	}
	return ctrl.Result{RequeueAfter: upgradePoll}, true, nil
}

func orNothing(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// maybeStart plans a version change when spec.version differs from what runs and the
// policy allows it. The plan and its prechecks are persisted first; nothing is touched
// until a later pass finds every precheck passed.
func (r *Reconciler) maybeStart(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) ctrl.Result {
	cur := c.Status.CurrentVersion
	strategy := c.GetStrategy()
	if cur == "" || operationOf(strategy) == "" {
		return ctrl.Result{}
	}
	targetImage := upgrade.ResolveImage(c.Spec.Image, c.Spec.Version)
	imageOnly := upgrade.SameVersion(c.Spec.Version, cur)
	if imageOnly && !upgrade.ImageChanged(obs, targetImage) {
		if off := obs.OffTemplate(); len(off) > 0 {
			return r.startRollout(ctx, c, obs, off)
		}
		return ctrl.Result{}
	}
	d := upgrade.EvaluateVersion(upgrade.VersionRequest{Desired: c.Spec.Version, Image: c.Spec.Image, CurrentVersion: cur})
	if !d.Allowed || (!d.IsUpgrade && !imageOnly) {
		return ctrl.Result{}
	}
	target := trimV(c.Spec.Version)
	if lr := c.Status.LastRollback; lr != nil && lr.Retry == "" && upgrade.SameVersion(target, lr.TargetVersion) {
		// Rolled back: not again on its own. The RolledBack condition says what to do.
		return ctrl.Result{}
	}
	pcs := r.prechecks(ctx, c, obs, strategy, kind(imageOnly), cur, target)
	id := operationID(c, "upgrade-to-"+target+"-"+targetImage, obs.Now)
	pods := rolling.Plan(obs)
	undo := fmt.Sprintf("OpenBao does not support downgrades in place: before the first member is replaced, set spec.version back to %s; "+
		"afterwards, restore the pre-upgrade snapshot into a new cluster at %s", cur, cur)
	if imageOnly {
		undo = fmt.Sprintf("the version stays %s: set spec.image back to the image the members ran before (%s) and the same rolling replacement runs again", cur, upgrade.RunningImage(obs))
	}
	if strategy == baov1.BlueGreenStrategy {
		green := workload.NamesFor(c).ForStatefulSet(workload.NamesFor(c).GreenStatefulSet(id))
		pods = nil
		for i := range c.GetReplicas() {
			pods = append(pods, green.Member(i))
		}
		undo = fmt.Sprintf("blue (%s, on %s) keeps the leadership until green (%s) leads; until then, kubectl annotate openbaocluster %s -n %s %s=$(date +%%s) --overwrite "+
			"rolls back (blue votes again, green is removed and deleted). Once a green member has led (status.blueGreen.leaderMovedAt), blue is never promoted again: "+
			"the way back is the pre-upgrade snapshot (%s)", c.ServingStatefulSet(), cur, green.StatefulSet(), c.Name, c.Namespace, baov1.AnnotationRollback, bluegreen.RestoreRunbook)
	}
	c.Status.LastRollback = nil
	c.Status.Upgrade = &baov1.UpgradeStatus{
		Kind:     kind(imageOnly),
		Strategy: strategy, FromVersion: cur, TargetVersion: target,
		TargetImage: targetImage, StartedAt: ptr(metav1.NewTime(obs.Now)),
		ID: id,
		Plan: &baov1.UpgradePlan{
			Pods:             pods,
			Prechecks:        pcs,
			SnapshotLocation: upgrade.SnapshotLocation(c.Spec.Upgrade.PreUpgradeSnapshot),
			UndoPath:         undo,
		},
	}
	what := fmt.Sprintf("from %s to %s", cur, target)
	if imageOnly {
		what = fmt.Sprintf("to image %s at the same version %s (from %s)", targetImage, cur, upgrade.RunningImage(obs))
	}
	if failed := upgrade.FirstFailedPrecheck(pcs); failed != nil {
		r.event(c, corev1.EventTypeWarning, eventUpgradeBlocked, fmt.Sprintf("Upgrade %s waits for precheck %s: %s", what, failed.Name, failed.Message))
	} else {
		r.event(c, corev1.EventTypeNormal, eventUpgradePlanned, fmt.Sprintf("Upgrading %s (%s) in the order %v", what, strategyWord(strategy), c.Status.Upgrade.Plan.Pods))
	}
	return ctrl.Result{RequeueAfter: persistRequeue}
}

func kind(imageOnly bool) baov1.OperationKind {
	if imageOnly {
		return baov1.OperationImage
	}
	return baov1.OperationVersion
}

// startRollout plans a rollout of the pod template: the members off the current
// template restart one at a time through the rolling machinery, on the version and
// image they run, followers first and the leader last. Like a version change, the
// plan and its prechecks are persisted first and nothing is touched until a later
// pass finds every precheck passed. A rollout is always rolling (a blue-green
// upgrade would copy the data for a restart) and takes no snapshot (no data
// changes).
func (r *Reconciler) startRollout(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster, off []string) ctrl.Result {
	cur, image := c.Status.CurrentVersion, upgrade.RunningImage(obs)
	changes := obs.TemplateChanges()
	pcs := r.prechecks(ctx, c, obs, baov1.RollingUpdateStrategy, baov1.OperationRollout, cur, cur)
	id := operationID(c, "rollout-"+obs.UpdateRevision(), obs.Now)
	var pods []string
	for _, p := range rolling.Plan(obs) {
		if slices.Contains(off, p) {
			pods = append(pods, p)
		}
	}
	c.Status.Upgrade = &baov1.UpgradeStatus{
		Kind: baov1.OperationRollout, Changes: changes,
		Strategy: baov1.RollingUpdateStrategy, FromVersion: cur, TargetVersion: cur,
		TargetImage: image, StartedAt: ptr(metav1.NewTime(obs.Now)),
		ID: id,
		Plan: &baov1.UpgradePlan{
			Pods:      pods,
			Prechecks: pcs,
			UndoPath: fmt.Sprintf("a rollout changes no version and no data: to undo it, set back what changed in the spec (%s); "+
				"the rollout then restarts the members onto that template, the same way", changes),
		},
	}
	if failed := upgrade.FirstFailedPrecheck(pcs); failed != nil {
		r.event(c, corev1.EventTypeWarning, eventUpgradeBlocked, fmt.Sprintf("Rollout of the pod template (%s) waits for precheck %s: %s", changes, failed.Name, failed.Message))
	} else {
		r.event(c, corev1.EventTypeNormal, eventRolloutPlanned, fmt.Sprintf("Restarting %v on the new pod template (%s), one at a time, the leader last", pods, changes))
	}
	return ctrl.Result{RequeueAfter: persistRequeue}
}

func (r *Reconciler) prechecks(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster, strategy baov1.UpgradeStrategyType, k baov1.OperationKind, from, to string) []baov1.Precheck {
	op := operationOf(strategy)
	if k == baov1.OperationRollout {
		op = operation.OperationRollout
	}
	return upgrade.Prechecks(upgrade.PrecheckInput{
		Cluster:           obs,
		Strategy:          strategy,
		Kind:              k,
		From:              from,
		To:                to,
		Replicas:          c.GetReplicas(),
		Policy:            upgrade.EvaluateVersion(upgrade.VersionRequest{Desired: c.Spec.Version, Image: c.Spec.Image, CurrentVersion: c.Status.CurrentVersion}),
		Snapshot:          c.Spec.Upgrade.PreUpgradeSnapshot,
		LockHeldBy:        operation.HeldByOther(&c.Status, op),
		SnapshotTargetErr: r.snapshotTargetErr(ctx, c),
	})
}

// applyTemplateImage sets only the OpenBao container's image in the pod template,
// under the upgrade manager's field manager, with the observed resourceVersion as a
// precondition.
func (r *Reconciler) applyTemplateImage(ctx context.Context, sts *appsv1.StatefulSet, image string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": sts.Name, "namespace": sts.Namespace, "resourceVersion": sts.ResourceVersion},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": workload.ContainerName, "image": image}},
		}}},
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(UpgradeFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to set the image of StatefulSet %s/%s to %s: %w", sts.Namespace, sts.Name, image, err)
	}
	return nil
}

// deletePod deletes the member's pod, only the exact pod observed (UID precondition),
// so a pod re-created meanwhile is never deleted by mistake.
func (r *Reconciler) deletePod(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster, name string) error {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleting member pod", "Pod", name, "uid", string(pod.UID))
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete pod %s/%s: %w", c.Namespace, name, err)
	}
	return nil
}

func (r *Reconciler) executorImage(c *baov1.OpenBaoCluster) string {
	if c.Spec.Upgrade.Executor.Image != "" {
		return c.Spec.Upgrade.Executor.Image
	}
	return r.ExecutorImage
}

func valueOr(v *int64, def int64) int64 {
	if v == nil {
		return def
	}
	return *v
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func trimV(v string) string {
	if len(v) > 0 && v[0] == 'v' {
		return v[1:]
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// stepDownJobName is the name of the current step-down attempt's Job. An upgrade
// started by an earlier release has no ID and keeps the names it started with.
func stepDownJobName(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus) string {
	st := up.CurrentStep
	if up.ID == "" {
		return executorjob.StepDownJobName(c, st.Pod, st.Attempts) //nolint:staticcheck // an upgrade started before IDs existed
	}
	return executorjob.JobName(c, executorjob.StepStepDown, up.ID, st.Pod, st.Attempts)
}

func stepDownJob(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus, image string) *batchv1.Job {
	st := up.CurrentStep
	if up.ID == "" {
		return executorjob.StepDownJob(c, st.Pod, st.Attempts, image) //nolint:staticcheck // an upgrade started before IDs existed
	}
	return executorjob.StepDownJobFor(c, up.ID, st.Pod, st.Attempts, image, executorjob.MemberAddresses(c))
}

// operationID is a short identity of one operation for the names and labels of its
// executor Jobs: 8 hex digits of a hash of the cluster's UID, the operation and its
// start time, persisted in status with the operation so it is the same after a
// restart.
func operationID(c *baov1.OpenBaoCluster, what string, started time.Time) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", c.UID, what, started.UnixNano())))
	return hex.EncodeToString(sum[:4])
}
