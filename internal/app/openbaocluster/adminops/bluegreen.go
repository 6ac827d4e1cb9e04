package adminops

import (
	"context"
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/objectapply"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Event reasons of blue-green upgrades.
const (
	eventBlueGreenPhase   baov1.Reason = "BlueGreenPhase"
	eventPromoteAccepted  baov1.Reason = "PromoteAccepted"
	eventBlueGreenCleanup baov1.Reason = "BlueGreenCleanup"
	eventRollbackStarted  baov1.Reason = "RollbackStarted"
	eventRollbackRefused  baov1.Reason = "RollbackRefused"
	eventRolledBack       baov1.Reason = "RolledBack"
)

// reconcileBlueGreen drives a blue-green upgrade whose snapshot is taken: one
// bluegreen.Decide over this pass's observation, then its one action.
func (r *Reconciler) reconcileBlueGreen(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (ctrl.Result, error) {
	up := c.Status.Upgrade
	in, err := r.blueGreenInput(ctx, c, obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := bluegreen.Decide(in)
	c.Status.BlueGreen = d.Status
	up.WaitingFor = d.WaitingFor
	up.Progress = &d.Progress
	if d.Serving != "" {
		c.Status.StatefulSet = d.Serving
	}
	if st := d.Status; st != nil {
		up.Plan.Pods = greenMembers(c, st)
	}
	if d.Event != "" && d.Kind != operation.KindComplete {
		r.event(c, corev1.EventTypeNormal, eventBlueGreenPhase, d.Event)
		d.Event = ""
	}
	return r.execute(ctx, c, obs, d.Action, strategyHooks{
		poll: upgradePoll,
		job:  func(operation.Action) (*batchv1.Job, error) { return r.blueGreenJob(c, d) },
		complete: func() {
			c.Status.StatefulSet = d.Status.Green.StatefulSet
			c.Status.BlueGreen = nil
		},
	})
}

// blueGreenInput gathers what Decide needs beyond the observation: what is left
// of blue, the client Service's selection, and the current step's Job.
func (r *Reconciler) blueGreenInput(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (bluegreen.Input, error) {
	up, st := c.Status.Upgrade, c.Status.BlueGreen
	bgSpec := c.Spec.Upgrade.BlueGreen
	in := bluegreen.Input{
		Name: c.Name, Namespace: c.Namespace, Upgrade: up, Status: st, Cluster: obs,
		Serving: c.ServingStatefulSet(), GreenName: workload.NamesFor(c).GreenStatefulSet(up.ID), Replicas: c.GetReplicas(),
		BlueExists: obs.StatefulSet != nil,
		Settings: bluegreen.Settings{
			MinSync: c.GetMinSyncDuration(), PhaseTimeout: c.GetPhaseTimeout(),
			MaxLag:      uint64(valueOr(c.Spec.Upgrade.Rolling.MaxLagEntries, 1000)),
			AutoPromote: bgSpec.AutoPromote, Paused: c.Spec.Upgrade.Paused, HasHook: bgSpec.ValidationHook != nil,
			MaxJobFailures:           c.GetMaxJobFailures(),
			AutoRollbackOnExecutor:   bgSpec.AutoRollback.OnExecutorFailure,
			AutoRollbackOnValidation: bgSpec.AutoRollback.OnValidationFailure,
		},
	}
	if obs.StatefulSet != nil {
		in.BlueRevision = obs.StatefulSet.Status.CurrentRevision
	}
	if st == nil {
		return in, nil
	}
	if st.Phase == baov1.BlueGreenCutover {
		svc := &corev1.Service{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).ClientService()}, svc)
		if err != nil && !apierrors.IsNotFound(err) {
			return in, fmt.Errorf("failed to get the client Service of %s/%s: %w", c.Namespace, c.Name, err)
		}
		in.ClientSelectsGreen = err == nil && svc.Spec.Selector[workload.LabelInstance] == st.Green.StatefulSet
	}
	if st.Phase == baov1.BlueGreenCleanup {
		vols, err := r.blueVolumes(ctx, c, st.Blue.StatefulSet)
		if err != nil {
			return in, err
		}
		in.BlueVolumes = len(vols)
	}
	if st.Phase == baov1.BlueGreenRollbackCleanup {
		in.GreenExists = obs.GreenStatefulSet != nil
		vols, err := r.blueVolumes(ctx, c, st.Green.StatefulSet)
		if err != nil {
			return in, err
		}
		in.GreenVolumes = len(vols)
	}
	if s := st.CurrentStep; s != nil && s.Attempts > 0 {
		name := blueGreenJobName(c, up.ID, s)
		job, _, err := r.observeJob(ctx, c, name, up.ID, obs.Now)
		if err != nil {
			return in, err
		}
		in.StepJob, in.StepJobName = job, name
	}
	return in, nil
}

// blueGreenJobName names the Job of the current step's attempt.
func blueGreenJobName(c *baov1.OpenBaoCluster, opID string, s *baov1.UpgradeStep) string {
	if s.Action == bluegreen.StepValidate {
		return bluegreen.ValidationJobName(c, opID, s.Attempts)
	}
	return executorjob.JobName(c, executorjob.StepLabelOf(s.Action), opID, s.Pod, s.Attempts)
}

// blueGreenJob builds the Job of the current step: an executor Job that knows the
// addresses of every blue and green member (the leader may be on either side), or
// the validation hook.
func (r *Reconciler) blueGreenJob(c *baov1.OpenBaoCluster, d bluegreen.Decision) (*batchv1.Job, error) {
	up, st := c.Status.Upgrade, c.Status.BlueGreen
	s := st.CurrentStep
	image := r.executorImage(c)
	addrs := append(setAddresses(c, st.Blue), setAddresses(c, st.Green)...)
	switch d.Job {
	case operation.JobValidate:
		hook := c.Spec.Upgrade.BlueGreen.ValidationHook
		if hook == nil {
			return nil, fmt.Errorf("spec.upgrade.blueGreen.validationHook of %s/%s is gone while the upgrade validates green: set it again, or retry without it", c.Namespace, c.Name)
		}
		return bluegreen.ValidationJob(c, up.ID, s.Attempts, hook, c.GetValidationHookTimeout(), setAddresses(c, st.Green), caSecretName(c)), nil
	case operation.JobPromote:
		return executorjob.PromoteJob(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	case operation.JobDemote:
		return executorjob.DemoteJob(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	case operation.JobStepDown:
		return executorjob.StepDownJobFor(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	case operation.JobRemovePeer:
		return executorjob.RemovePeerJob(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	}
	return nil, fmt.Errorf("unknown executor Job kind %q", d.Job)
}

// setAddresses are the API addresses of one StatefulSet's members.
func setAddresses(c *baov1.OpenBaoCluster, set baov1.MemberSet) []string {
	n := workload.NamesFor(c).ForStatefulSet(set.StatefulSet)
	out := make([]string, 0, set.Replicas)
	for i := range set.Replicas {
		out = append(out, fmt.Sprintf("https://%s:%d", n.MemberHost(i, c.Namespace), workload.APIPort))
	}
	return out
}

func greenMembers(c *baov1.OpenBaoCluster, st *baov1.BlueGreenStatus) []string {
	n := workload.NamesFor(c).ForStatefulSet(st.Green.StatefulSet)
	out := make([]string, 0, st.Green.Replicas)
	for i := range st.Green.Replicas {
		out = append(out, n.Member(i))
	}
	return out
}

func caSecretName(c *baov1.OpenBaoCluster) string {
	if c.Spec.TLS.SecretName != "" {
		return c.Spec.TLS.SecretName
	}
	return workload.NamesFor(c).TLSSecret()
}

// applyBlueGreenObject creates green's StatefulSet, or points the client Service
// at the serving StatefulSet (green once status.statefulSet moved).
func (r *Reconciler) applyBlueGreenObject(ctx context.Context, c *baov1.OpenBaoCluster, obj operation.Object) error {
	st := c.Status.BlueGreen
	switch obj {
	case operation.ObjectGreenStatefulSet:
		cert := ""
		if c.Status.TLS != nil {
			cert = c.Status.TLS.CertificateSHA256
		}
		annotations, err := workload.TemplateAnnotations(c, cert)
		if err != nil {
			return err
		}
		sts, err := workload.StatefulSet(c, workload.StatefulSetParams{
			Image: st.Green.Image, TLSSecretName: caSecretName(c), Name: st.Green.StatefulSet, TemplateAnnotations: annotations})
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
	case operation.ObjectClientService:
		// Under the workload loop's field manager: it computes the same selector
		// from status.statefulSet and owns the Service afterwards.
		if err := objectapply.Apply(ctx, r.Client, workload.Services(c)[1]); err != nil {
			return fmt.Errorf("failed to point the client Service at %s: %w", c.ServingStatefulSet(), err)
		}
		return nil
	}
	return fmt.Errorf("blue-green cannot apply %q", obj)
}

// deleteBlueGreenObject deletes blue's StatefulSet (its pods go with it), or the
// volume claims of blue's members once their pods are gone.
func (r *Reconciler) deleteBlueGreenObject(ctx context.Context, c *baov1.OpenBaoCluster, obj operation.Object) error {
	st := c.Status.BlueGreen
	switch obj {
	case operation.ObjectBlueStatefulSet:
		sts := &appsv1.StatefulSet{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: st.Blue.StatefulSet}, sts); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := r.Client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &sts.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete blue's StatefulSet %s/%s: %w", c.Namespace, sts.Name, err)
		}
		return nil
	case operation.ObjectGreenStatefulSet:
		// A rollback: every green peer left Raft first.
		sts := &appsv1.StatefulSet{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: st.Green.StatefulSet}, sts); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := r.Client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &sts.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete green's StatefulSet %s/%s: %w", c.Namespace, sts.Name, err)
		}
		return nil
	case operation.ObjectBlueVolumes, operation.ObjectGreenVolumes:
		set, side := st.Blue.StatefulSet, "blue"
		if obj == operation.ObjectGreenVolumes {
			set, side = st.Green.StatefulSet, "green"
		}
		vols, err := r.blueVolumes(ctx, c, set)
		if err != nil {
			return err
		}
		for i := range vols {
			pvc := &vols[i]
			if err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("failed to delete %s's volume claim %s/%s: %w", side, c.Namespace, pvc.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("blue-green cannot delete %q", obj)
}

// blueVolumes lists the data volume claims of one StatefulSet's members:
// data-<set>-<ordinal>, any ordinal (a claim left by an earlier scale-down too). For
// blue, green's claims (data-<blue>-<revision>-<ordinal>) never match.
func (r *Reconciler) blueVolumes(ctx context.Context, c *baov1.OpenBaoCluster, blue string) ([]corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: c.Name}); err != nil {
		return nil, fmt.Errorf("failed to list the volume claims of %s/%s: %w", c.Namespace, c.Name, err)
	}
	re := regexp.MustCompile("^" + regexp.QuoteMeta(dataVolume+"-"+blue) + "-[0-9]+$")
	var out []corev1.PersistentVolumeClaim
	for _, pvc := range list.Items {
		if re.MatchString(pvc.Name) && pvc.DeletionTimestamp.IsZero() {
			out = append(out, pvc)
		}
	}
	return out, nil
}

func phaseOf(st *baov1.BlueGreenStatus) string {
	if st == nil {
		return ""
	}
	return string(st.Phase)
}
