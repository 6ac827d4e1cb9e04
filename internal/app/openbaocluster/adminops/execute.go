package adminops

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// holdRequeue is how often an upgrade that holds for a person looks again; the
// request itself (an annotation, spec.upgrade.paused) triggers a pass at once.
const holdRequeue = 10 * time.Second

// strategyHooks are what the executor needs from a strategy beyond the action: the
// Job of the current step, how fast to poll OpenBao, and what else the completing
// status write clears.
type strategyHooks struct {
	// job builds the executor Job of a CreateJob.
	job func(a operation.Action) (*batchv1.Job, error)
	// poll is how soon a pass that waits on OpenBao or on a pod looks again (OpenBao
	// has no watch). Only a cluster with an upgrade in progress polls this often.
	poll time.Duration
	// complete finishes the status of a Complete beyond currentVersion, the cleared
	// upgrade and the released lock; nil for nothing more.
	complete func()
}

// execute carries out one operation.Action of an upgrade: the one executor of both
// strategies. Every disruptive action it takes is named by status persisted before
// it (an object of the cluster, a Job named after the operation, step, member and
// attempt), and is idempotent: a create that finds the object, an apply of the same
// fields, a delete of what is gone are no-ops.
func (r *Reconciler) execute(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster, a operation.Action, h strategyHooks) (ctrl.Result, error) {
	up := c.Status.Upgrade
	log := ctrl.LoggerFrom(ctx).WithValues("action", string(a.Kind), "Pod", a.Member)
	if a.Event != "" && a.Kind != operation.KindComplete {
		r.event(c, corev1.EventTypeNormal, eventUpgradeStep, a.Event)
	}
	switch a.Kind {
	case operation.KindPersist:
		return ctrl.Result{RequeueAfter: maxDuration(a.RequeueAfter, persistRequeue)}, nil
	case operation.KindApply:
		log.Info("Applying", "object", string(a.Object))
		if err := r.applyObject(ctx, c, a.Object); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	case operation.KindDelete:
		log.Info("Deleting", "object", string(a.Object))
		if err := r.deleteObject(ctx, c, obs, a); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: h.poll}, nil
	case operation.KindCreateJob:
		job, err := h.job(a)
		if err != nil {
			return ctrl.Result{}, err
		}
		created, err := r.createJob(ctx, job)
		if err != nil {
			return ctrl.Result{}, err
		}
		if created {
			r.eventNow(c, corev1.EventTypeNormal, eventUpgradeStep, fmt.Sprintf("%s (Job %s)", upgrade.Sentence(a.WaitingFor), job.Name))
		}
		return ctrl.Result{RequeueAfter: h.poll}, nil
	case operation.KindHold:
		return ctrl.Result{RequeueAfter: holdRequeue}, nil
	case operation.KindFail:
		if up.Failure == nil {
			t := metav1.NewTime(obs.Now)
			up.Failure = &baov1.UpgradeFailure{Reason: a.Reason, Message: a.Message, Pod: a.Member, At: &t}
		}
		r.event(c, corev1.EventTypeWarning, eventUpgradeFailed, a.Message)
		return ctrl.Result{}, nil
	case operation.KindBreakGlass:
		return ctrl.Result{}, r.enterBreakGlass(c, obs, a.BreakGlass, a.Member, a.Message)
	case operation.KindRolledBack:
		// The cleared upgrade and the rollback's record in one status write;
		// currentVersion stays what blue runs.
		r.event(c, corev1.EventTypeNormal, eventRolledBack, a.Event)
		t := metav1.NewTime(obs.Now)
		lr := &baov1.RollbackRecord{FromVersion: up.FromVersion, TargetVersion: up.TargetVersion, At: &t}
		if bg := c.Status.BlueGreen; bg != nil {
			lr.Reason = bg.RollbackReason
		}
		c.Status.LastRollback = lr
		c.Status.Upgrade, c.Status.BlueGreen = nil, nil
		operation.Release(&c.Status, operationFor(up))
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	case operation.KindComplete:
		// Invariant 8: the version and the cleared upgrade go out in one status write.
		msg := a.Event
		switch {
		case msg != "":
		case up.Kind == baov1.OperationRollout:
			msg = fmt.Sprintf("Every member runs the new pod template (%s)", up.Changes)
		default:
			msg = fmt.Sprintf("Every member runs %s (from %s)", up.TargetVersion, up.FromVersion)
		}
		r.event(c, corev1.EventTypeNormal, eventUpgradeCompleted, msg)
		c.Status.CurrentVersion = up.TargetVersion
		c.Status.Upgrade = nil
		if h.complete != nil {
			h.complete()
		}
		operation.Release(&c.Status, operationFor(up))
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	}
	// KindWait.
	if up.Failure != nil {
		return ctrl.Result{}, nil
	}
	if a.RequeueAfter == 0 {
		// Waiting on OpenBao, which has no watch: look again soon.
		return ctrl.Result{RequeueAfter: h.poll}, nil
	}
	// A timer (settle time, cooldown): wake when it ends, and meanwhile every 2 s.
	return ctrl.Result{RequeueAfter: min(a.RequeueAfter, openbaoPollInterval)}, nil
}

// applyObject applies what an Apply action names.
func (r *Reconciler) applyObject(ctx context.Context, c *baov1.OpenBaoCluster, obj operation.Object) error {
	if obj != operation.ObjectPodTemplate {
		return r.applyBlueGreenObject(ctx, c, obj)
	}
	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).StatefulSet()}, sts); err != nil {
		return fmt.Errorf("failed to get the StatefulSet of %s/%s: %w", c.Namespace, c.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Updating the pod template image", "image", c.Status.Upgrade.TargetImage)
	return r.applyTemplateImage(ctx, sts, c.Status.Upgrade.TargetImage)
}

// deleteObject deletes what a Delete action names.
func (r *Reconciler) deleteObject(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster, a operation.Action) error {
	if a.Object != operation.ObjectPod {
		if err := r.deleteBlueGreenObject(ctx, c, a.Object); err != nil {
			return err
		}
		r.event(c, corev1.EventTypeNormal, eventBlueGreenCleanup, upgrade.Sentence(a.WaitingFor))
		return nil
	}
	return r.deletePod(ctx, c, obs, a.Member)
}
