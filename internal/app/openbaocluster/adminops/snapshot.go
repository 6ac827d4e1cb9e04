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
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// Event reasons of the pre-upgrade snapshot.
const (
	eventSnapshotStarted baov1.Reason = "SnapshotStarted"
	eventSnapshotTaken   baov1.Reason = "SnapshotTaken"
	eventSnapshotReused  baov1.Reason = "SnapshotReused"
)

// snapshotTargetTimeout bounds the reachability precheck of the snapshot target.
const snapshotTargetTimeout = 5 * time.Second

// reconcileSnapshot drives the pre-upgrade snapshot phase, one action per pass.
func (r *Reconciler) reconcileSnapshot(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (ctrl.Result, error) {
	up := c.Status.Upgrade
	spec := c.Spec.Upgrade.PreUpgradeSnapshot
	in := snapshot.Input{Spec: spec, Upgrade: up, Last: c.Status.LastSnapshot, Now: obs.Now, Paused: c.Spec.Upgrade.Paused}
	if step := up.CurrentStep; step != nil && step.Attempts > 0 && spec.S3 != nil {
		in.JobName = snapshot.JobName(c, up, step.Attempts)
		in.WantLocation = snapshot.Location(spec.S3.Bucket, snapshot.ObjectKey(c, up, step.Attempts))
		if err := r.observeSnapshotJob(ctx, c, &in); err != nil {
			return ctrl.Result{}, err
		}
	}
	d := snapshot.Decide(in)
	snapshot.Record(&c.Status, d, obs.Now)
	log := ctrl.LoggerFrom(ctx).WithValues("action", string(d.Action))
	switch d.Action {
	case snapshot.ActionBegin:
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	case snapshot.ActionStartJob:
		job := snapshot.Job(c, up, up.CurrentStep.Attempts, r.executorImage(c))
		err := r.Client.Create(ctx, job)
		if apierrors.IsAlreadyExists(err) {
			// This attempt's Job exists (a pass that read stale status): nothing to do.
			return ctrl.Result{RequeueAfter: openbaoPollInterval}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to create snapshot Job %s/%s: %w", c.Namespace, job.Name, err)
		}
		log.Info("Started the pre-upgrade snapshot Job", "Job", job.Name)
		r.event(c, corev1.EventTypeNormal, eventSnapshotStarted, fmt.Sprintf("Taking the pre-upgrade snapshot into %s (Job %s, attempt %d of %d)",
			snapshot.Location(spec.S3.Bucket, snapshot.ObjectKey(c, up, up.CurrentStep.Attempts)), job.Name,
			up.CurrentStep.Attempts, operation.MaxAttempts(up.CurrentStep)))
		return ctrl.Result{RequeueAfter: openbaoPollInterval}, nil
	case snapshot.ActionRecord:
		r.event(c, corev1.EventTypeNormal, eventSnapshotTaken, fmt.Sprintf("Pre-upgrade snapshot of %s at Raft index %d verified: %s, %d bytes, sha256 %s",
			d.Receipt.FromMember, d.Receipt.RaftIndex, d.Receipt.Location, d.Receipt.SizeBytes, d.Receipt.SHA256))
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	case snapshot.ActionReuse:
		r.event(c, corev1.EventTypeNormal, eventSnapshotReused, d.WaitingFor)
		return ctrl.Result{RequeueAfter: persistRequeue}, nil
	case snapshot.ActionFail:
		r.event(c, corev1.EventTypeWarning, eventUpgradeFailed, d.Message)
		return ctrl.Result{}, nil
	default:
		if up.Failure != nil {
			return ctrl.Result{}, nil
		}
		// Job changes are watched; the timer covers the retry delay and a pause.
		if d.RequeueAfter == 0 || d.RequeueAfter > openbaoPollInterval {
			d.RequeueAfter = openbaoPollInterval
		}
		return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
	}
}

// observeSnapshotJob reads the current attempt's Job and, once it finished, the
// receipt or failure its pod left in the termination message.
func (r *Reconciler) observeSnapshotJob(ctx context.Context, c *baov1.OpenBaoCluster, in *snapshot.Input) error {
	observed, job, err := r.observeJob(ctx, c, in.JobName, "", in.Now)
	if err != nil {
		return err
	}
	in.Job = observed
	phase, msg := observed.Phase, observed.Message
	if job == nil || (phase != operation.JobSucceeded && phase != operation.JobFailed) {
		return nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return fmt.Errorf("failed to list the pods of Job %s/%s: %w", c.Namespace, job.Name, err)
	}
	var term string
	for i := range pods.Items {
		if m := executorjob.TerminationMessage(&pods.Items[i]); m != "" {
			term = m
		}
	}
	if phase == operation.JobFailed {
		if term != "" {
			in.Job.Message = fmt.Sprintf("%s (%s)", term, msg)
		}
		return nil
	}
	in.Receipt, in.ReceiptErr = snapshot.ParseReceipt(term)
	return nil
}

// snapshotTargetErr checks, before an upgrade starts, that the snapshot target is
// reachable with its credentials. nil when no snapshot is needed.
func (r *Reconciler) snapshotTargetErr(ctx context.Context, c *baov1.OpenBaoCluster) error {
	spec := c.Spec.Upgrade.PreUpgradeSnapshot
	if spec.Policy == baov1.SnapshotNever || spec.S3 == nil {
		return nil
	}
	s := &corev1.Secret{}
	ref := client.ObjectKey{Namespace: c.Namespace, Name: spec.S3.CredentialsSecretRef.Name}
	if err := r.APIReader.Get(ctx, ref, s); err != nil {
		return fmt.Errorf("failed to read the credentials Secret %s named by spec.upgrade.preUpgradeSnapshot.s3.credentialsSecretRef: %w", ref, err)
	}
	store, err := snapshot.NewStore(snapshot.S3Config{
		Endpoint: spec.S3.Endpoint, Bucket: spec.S3.Bucket, Region: spec.S3.Region, PathStyle: spec.S3.ForcePathStyle,
		AccessKeyID: string(s.Data[snapshot.EnvAccessKeyID]), SecretAccessKey: string(s.Data[snapshot.EnvSecretAccessKey]),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotTargetTimeout)
	defer cancel()
	return store.Reachable(ctx)
}
