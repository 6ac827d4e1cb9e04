package adminops

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// observeJob reads the executor Job of the current attempt, by its deterministic
// name, as the strategies see it:
//
//   - a Job of another operation (opID set and its label differs) never counts: it
//     is reported as a failed attempt, so the next attempt gets a name of its own;
//   - a running Job whose pod cannot start (an image that cannot be pulled or run, a
//     Secret that is gone) is deleted and reported failed with the pod's reason,
//     after executorjob.PodStartGrace instead of the Job's whole deadline.
//
// It returns the Job itself too (nil when there is none).
func (r *Reconciler) observeJob(ctx context.Context, c *baov1.OpenBaoCluster, name, opID string, now time.Time) (operation.Job, *batchv1.Job, error) {
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return operation.Job{}, nil, nil
		}
		return operation.Job{}, nil, fmt.Errorf("failed to get Job %s/%s: %w", c.Namespace, name, err)
	}
	if opID != "" && !executorjob.JobOfOperation(job, opID) {
		return operation.Job{Phase: operation.JobFailed, FinishedAt: now,
			Message: fmt.Sprintf("Job %s belongs to another operation (%s=%q), not to this one (%s)", name, executorjob.LabelOperation, job.Labels[executorjob.LabelOperation], opID)}, nil, nil
	}
	phase, finished, msg := executorjob.JobPhaseOf(job)
	obs := operation.Job{Phase: phase, FinishedAt: finished, Message: msg}
	if phase != operation.JobRunning || job.DeletionTimestamp != nil {
		return obs, job, nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return operation.Job{}, nil, fmt.Errorf("failed to list the pods of Job %s/%s: %w", c.Namespace, job.Name, err)
	}
	for i := range pods.Items {
		stuck := executorjob.StuckPod(&pods.Items[i], now, executorjob.PodStartGrace)
		if stuck == "" {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleting an executor Job whose pod cannot start", "Job", job.Name, "reason", stuck)
		if err := r.Client.Delete(ctx, job, client.PropagationPolicy("Background"), client.Preconditions{UID: &job.UID}); client.IgnoreNotFound(err) != nil {
			return operation.Job{}, nil, fmt.Errorf("failed to delete Job %s/%s: %w", c.Namespace, job.Name, err)
		}
		return operation.Job{Phase: operation.JobFailed, FinishedAt: now,
			Message: stuck + "; check spec.upgrade.executor.image and the Secrets the Job uses, then set the baokeeper.dev/retry annotation"}, nil, nil
	}
	return obs, job, nil
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
