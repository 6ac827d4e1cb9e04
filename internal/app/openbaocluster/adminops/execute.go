package adminops

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/objectapply"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// UpgradeFieldManager is the field manager of the upgrade manager's writes to the
// StatefulSet (the pod template's image, the replicas).
const UpgradeFieldManager = "baokeeper-upgrade"

// openbaoPollInterval is how often an operation that waits on OpenBao itself
// (autopilot after an election, a member catching up) looks again at most: OpenBao's
// state has no watch. Only clusters with an operation in progress are polled.
const openbaoPollInterval = 2 * time.Second

// persistRequeue is how soon a pass that only recorded an intent runs again: the
// status write of our own does not trigger a pass, and the action waits for it.
const persistRequeue = 200 * time.Millisecond

// holdRequeue is how often an operation that holds for a person looks again; the
// request itself (an annotation, spec.upgrade.paused) triggers a pass at once.
const holdRequeue = 10 * time.Second

// execute carries out one Plan: the one executor of every operation. The plan's
// status becomes the cluster's (written once, at the end of the pass), its events
// are announced once that write landed, and its one action is taken. Every
// disruptive action is named by status persisted before it (an object of the
// cluster, a Job named after the operation, step, member and attempt), and is
// idempotent: a create that finds the object, an apply of the same fields, a delete
// of what is gone are no-ops.
func (r *Reconciler) execute(ctx context.Context, c *baov1.OpenBaoCluster, s *operation.Snapshot, p operation.Plan) (ctrl.Result, error) {
	if p.Status != nil {
		c.Status = *p.Status
	}
	for _, ev := range p.Events {
		r.emit(c, ev)
	}
	if p.LeaderTransferred && r.Metrics != nil {
		r.Metrics.LeaderTransfer(c.Namespace, c.Name)
	}
	poll := p.Poll
	if poll == 0 {
		poll = upgrade.Poll
	}
	log := ctrl.LoggerFrom(ctx).WithValues("action", string(p.Kind), "Pod", p.Member)
	switch p.Kind {
	case operation.KindNone:
		// Nothing to do; a timer, if any, says when to look again.
		return ctrl.Result{RequeueAfter: p.RequeueAfter}, nil
	case operation.KindFail:
		return ctrl.Result{}, nil
	case operation.KindPersist, operation.KindComplete, operation.KindRolledBack:
		return ctrl.Result{RequeueAfter: max(p.RequeueAfter, persistRequeue)}, nil
	case operation.KindApply:
		log.Info("Applying", "object", string(p.Object))
		if err := r.applyObject(ctx, c, s, p.Action); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	case operation.KindDelete:
		log.Info("Deleting", "object", string(p.Object))
		err := r.deleteObject(ctx, c, p.Action)
		if errors.Is(err, errEvictionRefused) {
			// The step stays where it is (its intent is persisted); the next pass
			// decides again from what it observes, within the step's timeout.
			return ctrl.Result{RequeueAfter: openbaoPollInterval}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: poll}, nil
	case operation.KindCreateJob:
		if p.Job == nil {
			return ctrl.Result{}, fmt.Errorf("the %s step of %s/%s names no Job: this is a bug, please report it", p.Action.Job, c.Namespace, c.Name)
		}
		var created bool
		var err error
		if p.Action.Job == operation.JobRebind {
			// The Job runs as the source cluster's executor account: create it when
			// the source (and so its account) is gone.
			if err := r.ensureRestoreIdentity(ctx, c); err != nil {
				return ctrl.Result{}, err
			}
		}
		if r.executors != nil && executorjob.Mailed(p.Job) {
			created, err = r.askExecutor(ctx, c, r.executors, p.Job, metav1.NewTime(s.Now))
		} else {
			created, err = r.createJob(ctx, p.Job)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if created && p.JobEvent != nil {
			ev := *p.JobEvent
			if r.executors != nil && executorjob.Mailed(p.Job) {
				ev.Message = fmt.Sprintf("%s (asked executor %s for %s)", ev.Message, executorjob.ServeJobName(c, p.Job.Labels[executorjob.LabelOperation]), p.Job.Name)
			} else {
				ev.Message = fmt.Sprintf("%s (Job %s)", ev.Message, p.Job.Name)
			}
			r.emitNow(c, ev)
		}
		if p.RequeueAfter > 0 {
			return ctrl.Result{RequeueAfter: p.RequeueAfter}, nil
		}
		return ctrl.Result{RequeueAfter: poll}, nil
	case operation.KindHold:
		if p.RequeueAfter > 0 && p.RequeueAfter < holdRequeue {
			// A hold that ends at a known time (a maintenance window that opens).
			return ctrl.Result{RequeueAfter: p.RequeueAfter}, nil
		}
		return ctrl.Result{RequeueAfter: holdRequeue}, nil
	case operation.KindBreakGlass:
		return ctrl.Result{}, r.enterBreakGlass(c, s.Cluster, p.BreakGlass, p.Member, p.Message, p.Recovery)
	}
	// KindWait.
	if p.RequeueAfter == 0 {
		// Waiting on OpenBao, which has no watch: look again soon.
		return ctrl.Result{RequeueAfter: poll}, nil
	}
	// A timer (settle time, cooldown): wake when it ends, and meanwhile every 2 s.
	return ctrl.Result{RequeueAfter: min(p.RequeueAfter, openbaoPollInterval)}, nil
}

// applyObject applies what an Apply action names.
func (r *Reconciler) applyObject(ctx context.Context, c *baov1.OpenBaoCluster, s *operation.Snapshot, a operation.Action) error {
	switch a.Object {
	case operation.ObjectPodTemplate:
		if s.StatefulSet == nil {
			return fmt.Errorf("the StatefulSet %s/%s is gone: the workload reconciler creates it again", c.Namespace, c.ServingStatefulSet())
		}
		return r.applyTemplateImage(ctx, s.StatefulSet, a.Image)
	case operation.ObjectReplicas:
		if s.StatefulSet == nil {
			return fmt.Errorf("the StatefulSet %s/%s is gone: the workload reconciler creates it again", c.Namespace, c.ServingStatefulSet())
		}
		return r.applyReplicas(ctx, s.StatefulSet, a.Replicas)
	case operation.ObjectGreenStatefulSet:
		return r.createGreen(ctx, c)
	case operation.ObjectDrillCluster:
		return r.createChildCluster(ctx, c, snapshot.DrillCluster)
	case operation.ObjectRehearsalCluster:
		return r.createChildCluster(ctx, c, snapshot.RehearsalCluster)
	case operation.ObjectRehearsalVersion:
		return r.setRehearsalVersion(ctx, c, s)
	case operation.ObjectClientService:
		// Under the workload loop's field manager: it computes the same selector
		// from status.statefulSet and owns the Service afterwards.
		if err := objectapply.Apply(ctx, r.Client, workload.Services(c)[1]); err != nil {
			return fmt.Errorf("failed to point the client Service at %s: %w", c.ServingStatefulSet(), err)
		}
		return nil
	}
	return fmt.Errorf("the executor cannot apply %q", a.Object)
}

// deleteObject deletes what a Delete action names.
func (r *Reconciler) deleteObject(ctx context.Context, c *baov1.OpenBaoCluster, a operation.Action) error {
	switch a.Object {
	case operation.ObjectPod:
		return r.deletePod(ctx, c, a.Member)
	case operation.ObjectPods:
		return r.stopPods(ctx, c, a.Members)
	case operation.ObjectBlueStatefulSet:
		return r.deleteStatefulSet(ctx, c, c.Status.BlueGreen.Blue.StatefulSet, "blue")
	case operation.ObjectGreenStatefulSet:
		// A rollback: every green peer left Raft first.
		return r.deleteStatefulSet(ctx, c, c.Status.BlueGreen.Green.StatefulSet, "green")
	case operation.ObjectRestoreIdentity:
		return r.deleteRestoreIdentity(ctx, c)
	case operation.ObjectDrillCluster:
		return r.deleteChildCluster(ctx, c, snapshot.LabelDrillOf)
	case operation.ObjectRehearsalCluster:
		return r.deleteChildCluster(ctx, c, snapshot.LabelRehearsalOf)
	case operation.ObjectMemberData:
		return r.deleteMemberData(ctx, c, a.Members, a.Preconditions)
	case operation.ObjectBlueVolumes, operation.ObjectGreenVolumes, operation.ObjectVolume:
		for _, name := range a.Volumes {
			if err := r.deleteVolume(ctx, c, name); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("the executor cannot delete %q", a.Object)
}

// ensureRestoreIdentity creates the source cluster's executor ServiceAccount for a
// rebind Job when no object of that name exists; an existing one (the source's
// own) is used as it is.
func (r *Reconciler) ensureRestoreIdentity(ctx context.Context, c *baov1.OpenBaoCluster) error {
	sa := snapshot.RestoreIdentityAccount(c)
	err := r.Client.Create(ctx, sa)
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("Created the source cluster's executor account for the rebind", "ServiceAccount", sa.Name)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create ServiceAccount %s/%s for the restore's rebind: %w", sa.Namespace, sa.Name, err)
	}
	return nil
}

// deleteRestoreIdentity deletes the ServiceAccount ensureRestoreIdentity created,
// only when this cluster controls it (UID precondition); the source's own stays.
func (r *Reconciler) deleteRestoreIdentity(ctx context.Context, c *baov1.OpenBaoCluster) error {
	want := snapshot.RestoreIdentityAccount(c)
	sa := &corev1.ServiceAccount{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), sa); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ref := metav1.GetControllerOf(sa); ref == nil || ref.UID != c.UID {
		return nil
	}
	if err := r.Client.Delete(ctx, sa, client.Preconditions{UID: &sa.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete ServiceAccount %s/%s after the restore's rebind: %w", sa.Namespace, sa.Name, err)
	}
	return nil
}

// createChildCluster creates a drill or rehearsal copy, built from the persisted
// status by build.
func (r *Reconciler) createChildCluster(ctx context.Context, c *baov1.OpenBaoCluster, build func(*baov1.OpenBaoCluster) (*baov1.OpenBaoCluster, error)) error {
	d, err := build(c)
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Creating a copy of the cluster from a snapshot", "copy", d.Name, "snapshot", d.Spec.Bootstrap.FromSnapshot.Key)
	if err := r.Client.Create(ctx, d); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create %s/%s from a snapshot: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// setRehearsalVersion sets the rehearsal copy's spec.version to the target (and its
// spec.image to the cluster's): the copy's own upgrade runs.
func (r *Reconciler) setRehearsalVersion(ctx context.Context, c *baov1.OpenBaoCluster, s *operation.Snapshot) error {
	d, rh := s.Rehearsal, snapshot.ActiveRehearsal(&c.Status)
	if d == nil || rh == nil {
		return fmt.Errorf("no rehearsal copy of %s/%s to upgrade", c.Namespace, c.Name)
	}
	orig := d.DeepCopy()
	d.Spec.Version, d.Spec.Image = rh.TargetVersion, snapshot.RehearsalTargetImage(c, rh)
	ctrl.LoggerFrom(ctx).Info("Upgrading the rehearsal copy", "copy", d.Name, "version", d.Spec.Version)
	if err := r.Client.Patch(ctx, d, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("failed to set spec.version of rehearsal copy %s/%s to %s: %w", d.Namespace, d.Name, d.Spec.Version, err)
	}
	return nil
}

// deleteChildCluster deletes the cluster's drill or rehearsal copy (only one it
// controls, carrying label with its name), then the volume claims and the seal key
// the copy leaves behind (they have no owner: a cluster's data outlives it).
func (r *Reconciler) deleteChildCluster(ctx context.Context, c *baov1.OpenBaoCluster, label string) error {
	children := &baov1.OpenBaoClusterList{}
	if err := r.Client.List(ctx, children, client.InNamespace(c.Namespace), client.MatchingLabels{label: c.Name}); err != nil {
		return fmt.Errorf("failed to list the copies of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range children.Items {
		d := &children.Items[i]
		if !metav1.IsControlledBy(d, c) {
			continue
		}
		if d.DeletionTimestamp.IsZero() {
			ctrl.LoggerFrom(ctx).Info("Deleting a copy of the cluster", "copy", d.Name)
			if err := r.Client.Delete(ctx, d, client.Preconditions{UID: &d.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return fmt.Errorf("failed to delete %s/%s: %w", d.Namespace, d.Name, err)
			}
		}
		pvcs := &corev1.PersistentVolumeClaimList{}
		if err := r.Client.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: d.Name}); err != nil {
			return fmt.Errorf("failed to list the volume claims of restore-drill cluster %s/%s: %w", d.Namespace, d.Name, err)
		}
		for j := range pvcs.Items {
			if pvc := &pvcs.Items[j]; pvc.DeletionTimestamp.IsZero() {
				if err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("failed to delete volume claim %s/%s of %s: %w", pvc.Namespace, pvc.Name, d.Name, err)
				}
			}
		}
		seal := &corev1.Secret{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(d).SealSecret()}, seal)
		if err == nil && seal.Labels[workload.LabelCluster] == d.Name {
			if err := r.Client.Delete(ctx, seal, client.Preconditions{UID: &seal.UID}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("failed to delete the seal key of %s/%s: %w", d.Namespace, d.Name, err)
			}
		} else if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// createGreen creates green's StatefulSet from the persisted status.blueGreen.
func (r *Reconciler) createGreen(ctx context.Context, c *baov1.OpenBaoCluster) error {
	st := c.Status.BlueGreen
	annotations, err := workload.TemplateAnnotations(c)
	if err != nil {
		return err
	}
	sts, err := workload.StatefulSet(c, workload.StatefulSetParams{
		Image: st.Green.Image, TLSSecretName: workload.CASecretName(c), Name: st.Green.StatefulSet, TemplateAnnotations: annotations})
	if err != nil {
		return err
	}
	replicas := st.Green.Replicas
	sts.Spec.Replicas = &replicas
	err = r.Client.Create(ctx, sts)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create green's StatefulSet %s/%s: %w", c.Namespace, sts.Name, err)
	}
	return nil
}

// deleteStatefulSet deletes one StatefulSet of the cluster (its pods go with it),
// only the exact one read (UID precondition).
func (r *Reconciler) deleteStatefulSet(ctx context.Context, c *baov1.OpenBaoCluster, name, side string) error {
	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, sts); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := r.Client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &sts.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete %s's StatefulSet %s/%s: %w", side, c.Namespace, sts.Name, err)
	}
	return nil
}

// applyTemplateImage sets only the OpenBao container's image in the pod template.
func (r *Reconciler) applyTemplateImage(ctx context.Context, sts *appsv1.StatefulSet, image string) error {
	ctrl.LoggerFrom(ctx).Info("Updating the pod template image", "image", image)
	return r.applyStatefulSetFields(ctx, sts, map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": workload.ContainerName, "image": image}},
	}}}, "the image to "+image)
}

// applyReplicas sets only the StatefulSet's replicas.
func (r *Reconciler) applyReplicas(ctx context.Context, sts *appsv1.StatefulSet, replicas int32) error {
	ctrl.LoggerFrom(ctx).Info("Setting the StatefulSet's replicas", "replicas", replicas)
	return r.applyStatefulSetFields(ctx, sts, map[string]any{"replicas": int64(replicas)}, fmt.Sprintf("the replicas to %d", replicas))
}

// applyStatefulSetFields applies spec fields of the StatefulSet under the upgrade
// manager's field manager, with the observed resourceVersion as a precondition: a
// stale read conflicts instead of acting twice.
func (r *Reconciler) applyStatefulSetFields(ctx context.Context, sts *appsv1.StatefulSet, spec map[string]any, what string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": sts.Name, "namespace": sts.Namespace, "resourceVersion": sts.ResourceVersion},
		"spec":     spec,
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(UpgradeFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to set %s on StatefulSet %s/%s: %w", what, sts.Namespace, sts.Name, err)
	}
	return nil
}

// errEvictionRefused is deletePod's answer when the PodDisruptionBudget refuses the
// member's eviction: another member is down or being evicted (a node drain).
var errEvictionRefused = errors.New("the PodDisruptionBudget refuses the eviction")

// deletePod takes the member's pod down, only the exact pod read (UID precondition),
// so a pod re-created meanwhile is never deleted by mistake. A Ready member is
// evicted, not deleted: the PodDisruptionBudget then arbitrates between the operator
// and anyone else who evicts (kubectl drain), so the two never take two members down
// at once (found on the rig: a drain evicted a follower while the upgrade deleted
// another; the budget, which a plain delete does not consume, allowed both, and the
// leader lost its quorum). A member that is not Ready is already unavailable and is
// deleted; so is the only member of a 1-member cluster, and a member of a cluster
// whose budget no disruption controller has processed (status.observedGeneration 0:
// every eviction would be refused there).
func (r *Reconciler) deletePod(ctx context.Context, c *baov1.OpenBaoCluster, name string) error {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("Pod", name, "uid", string(pod.UID))
	if r.evicts(ctx, c, pod) {
		log.Info("Evicting member pod")
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
		err := r.Client.SubResource("eviction").Create(ctx, pod, ev)
		switch {
		case apierrors.IsTooManyRequests(err):
			log.Info("The PodDisruptionBudget refuses the eviction for now", "reason", err.Error())
			return errEvictionRefused
		case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			return fmt.Errorf("failed to evict pod %s/%s: %w", c.Namespace, name, err)
		}
		return nil
	}
	log.Info("Deleting member pod")
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete pod %s/%s: %w", c.Namespace, name, err)
	}
	return nil
}

// stopPods deletes the member pods named, each with its UID precondition, all at
// once and never through the eviction API: an offline upgrade stops every member,
// which no PodDisruptionBudget admits. Every pod is tried; the errors are joined.
func (r *Reconciler) stopPods(ctx context.Context, c *baov1.OpenBaoCluster, names []string) error {
	var errs []error
	for _, name := range names {
		pod := &corev1.Pod{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pod); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("failed to get pod %s/%s: %w", c.Namespace, name, err))
			}
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleting member pod for the offline upgrade", "Pod", name, "uid", string(pod.UID))
		err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("failed to delete pod %s/%s: %w", c.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}

// evicts reports whether the member's pod goes down through the eviction API (it
// reads the budget; the decision is takeDownBy).
func (r *Reconciler) evicts(ctx context.Context, c *baov1.OpenBaoCluster, pod *corev1.Pod) bool {
	pdb := &policyv1.PodDisruptionBudget{}
	processed := false
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).PodDisruptionBudget()}, pdb); err == nil {
		processed = pdb.Status.ObservedGeneration > 0
	}
	return takeDownBy(podReady(pod), c.GetReplicas(), processed) == takeDownEvict
}

// takeDown is how a member's pod is taken down.
type takeDown string

const (
	takeDownEvict  takeDown = "Evict"
	takeDownDelete takeDown = "Delete"
)

// takeDownBy decides how a member's pod is taken down: evicted when it is Ready, the
// cluster has more than one member and a disruption controller processed the budget
// (so that the budget arbitrates with drains); deleted otherwise (it is unavailable
// already, or no eviction could ever be allowed).
func takeDownBy(ready bool, replicas int32, budgetProcessed bool) takeDown {
	if ready && replicas > 1 && budgetProcessed {
		return takeDownEvict
	}
	return takeDownDelete
}

// deleteVolume deletes one volume claim of the cluster, only the exact claim read
// (UID precondition).
func (r *Reconciler) deleteVolume(ctx context.Context, c *baov1.OpenBaoCluster, name string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pvc); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleting a volume claim", "PersistentVolumeClaim", pvc.Name, "uid", string(pvc.UID))
	err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete the volume claim %s/%s: %w", c.Namespace, pvc.Name, err)
	}
	return nil
}

// deleteMemberData deletes, for each member, its data volume claim and then its
// pod, each only with the UID the recovery recorded for it (pre, by object name):
// an object without one there is left alone, and one replaced since (another UID)
// is refused by the API server's precondition. The claim goes first: its
// protection keeps it until the pod is gone, and the StatefulSet then creates the
// member's next pod with a new, empty claim.
func (r *Reconciler) deleteMemberData(ctx context.Context, c *baov1.OpenBaoCluster, members []string, pre map[string]string) error {
	var errs []error
	del := func(obj client.Object, what string) {
		uid := types.UID(pre[obj.GetName()])
		if uid == "" {
			return
		}
		obj.SetNamespace(c.Namespace)
		obj.SetUID(uid)
		ctrl.LoggerFrom(ctx).Info("Deleting for a recovery from a lost majority", what, obj.GetName(), "uid", string(uid))
		err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s %s/%s: %w", what, c.Namespace, obj.GetName(), err))
		}
	}
	for _, m := range members {
		del(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: workload.DataVolume + "-" + m}}, "PersistentVolumeClaim")
		del(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: m}}, "Pod")
	}
	return errors.Join(errs...)
}

// createJob creates an executor Job of the current attempt. AlreadyExists is no
// error: a pass that read the cluster before our own status write reached the cache
// finds the Job of this attempt, which its deterministic name makes the same Job.
func (r *Reconciler) createJob(ctx context.Context, job *batchv1.Job) (created bool, err error) {
	log := ctrl.LoggerFrom(ctx).WithValues("Job", job.Name, "step", job.Labels[executorjob.LabelStep])
	err = r.Client.Create(ctx, job)
	switch {
	case apierrors.IsAlreadyExists(err):
		log.V(1).Info("Executor Job exists")
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to create executor Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	log.Info("Started executor Job")
	return true, nil
}

// deleteStuckJobs deletes the executor Jobs whose pod cannot start: the snapshot
// reported them failed (operation.Snapshot.JobOf), and the next attempt has a name
// of its own.
func (r *Reconciler) deleteStuckJobs(ctx context.Context, c *baov1.OpenBaoCluster, s *operation.Snapshot) error {
	for name, j := range s.Jobs {
		if j.Stuck == "" {
			continue
		}
		job := &batchv1.Job{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, job); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("failed to get Job %s/%s: %w", c.Namespace, name, err)
			}
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleting an executor Job whose pod cannot start", "Job", name, "reason", j.Stuck)
		if err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete Job %s/%s: %w", c.Namespace, name, err)
		}
	}
	return nil
}

func (r *Reconciler) executorImage(c *baov1.OpenBaoCluster) string {
	if c.Spec.Upgrade.Executor.Image != "" {
		return c.Spec.Upgrade.Executor.Image
	}
	return r.ExecutorImage
}
