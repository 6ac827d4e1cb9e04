package bluegreen

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Operation is a blue-green upgrade whose snapshot (if any) is taken: one Decide
// over the snapshot, one action.
type Operation struct{}

// Name implements operation.Operation.
func (Operation) Name() string { return "BlueGreenUpgrade" }

// Decide implements operation.Operation.
func (Operation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	up := st.Upgrade
	in := input(s, st)
	d := Decide(in)
	st.BlueGreen = d.Status
	up.WaitingFor = d.WaitingFor
	up.Progress = &d.Progress
	if d.Serving != "" {
		st.StatefulSet = d.Serving
	}
	if bg := d.Status; bg != nil {
		up.Plan.Pods = greenMembers(c, bg)
	}
	var events []operation.Event
	if d.Event != "" && d.Kind != operation.KindComplete && d.Kind != operation.KindRolledBack {
		events = append(events, operation.Normal(upgrade.EventBlueGreenPhase, d.Event))
		d.Event = ""
	}
	if d.Kind == operation.KindCreateJob {
		job, err := stepJob(c, st, d.Job, s.ExecutorImage)
		if err != nil {
			d.Action = operation.Action{Kind: operation.KindFail, Reason: baov1.FailureValidationFailed, Member: d.Member,
				WaitingFor: "upgrade failed: " + err.Error(), Message: err.Error()}
		} else {
			p := upgrade.PlanOf(st, d.Action, s.Now, nil)
			p.Job = job
			return p.Say(events...)
		}
	}
	if d.Kind == operation.KindRolledBack {
		return rolledBack(st, d.Action, s.Now).Say(events...)
	}
	p := upgrade.PlanOf(st, d.Action, s.Now, func(st *baov1.OpenBaoClusterStatus) {
		st.StatefulSet = d.Status.Green.StatefulSet
		st.BlueGreen = nil
	})
	if d.Kind == operation.KindDelete && d.Object != operation.ObjectPod {
		switch d.Object {
		case operation.ObjectBlueVolumes:
			p.Volumes = workload.VolumesOf(d.Status.Blue.StatefulSet, s.Volumes)
		case operation.ObjectGreenVolumes:
			p.Volumes = workload.VolumesOf(d.Status.Green.StatefulSet, s.Volumes)
		}
		events = append(events, operation.Normal(upgrade.EventBlueGreenCleanup, upgrade.Sentence(d.WaitingFor)))
	}
	return p.Say(events...)
}

// rolledBack ends a rolled-back upgrade: the cleared upgrade and the rollback's
// record in one status write; currentVersion stays what blue runs.
func rolledBack(st *baov1.OpenBaoClusterStatus, a operation.Action, now time.Time) operation.Plan {
	up := st.Upgrade
	t := metav1.NewTime(now)
	lr := &baov1.RollbackRecord{FromVersion: up.FromVersion, TargetVersion: up.TargetVersion, At: &t}
	if bg := st.BlueGreen; bg != nil {
		lr.Reason = bg.RollbackReason
	}
	st.LastRollback = lr
	ev := a.Event
	a.Event = ""
	history.End(st, baov1.OutcomeRolledBack, lr.Reason, ev, now)
	st.Upgrade, st.BlueGreen = nil, nil
	operation.Release(st, upgrade.LockOf(up))
	return operation.Plan{Action: a, Status: st, Events: []operation.Event{operation.Normal(upgrade.EventRolledBack, ev)}}
}

// input gathers what Decide needs from the snapshot: what is left of blue and green,
// the client Service's selection, and the current step's Job.
func input(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus) Input {
	c := s.Object
	up, bg := st.Upgrade, st.BlueGreen
	bgSpec := c.Spec.Upgrade.BlueGreen
	in := Input{
		Name: c.Name, Namespace: c.Namespace, Upgrade: up, Status: bg, Cluster: s.Cluster,
		Serving: c.ServingStatefulSet(), GreenName: workload.NamesFor(c).GreenStatefulSet(up.ID), Replicas: c.GetReplicas(),
		BlueExists: s.StatefulSet != nil,
		Settings: Settings{
			MinSync: c.GetMinSyncDuration(), PhaseTimeout: c.GetPhaseTimeout(),
			MaxLag:      c.GetMaxLagEntries(),
			AutoPromote: bgSpec.AutoPromote, HasHook: bgSpec.ValidationHook != nil,
			MaxJobFailures:           c.GetMaxJobFailures(),
			AutoRollbackOnExecutor:   bgSpec.AutoRollback.OnExecutorFailure,
			AutoRollbackOnValidation: bgSpec.AutoRollback.OnValidationFailure,
		},
	}
	in.Settings.Paused, in.Settings.PauseReason = pauseOf(s, up, bg)
	if s.StatefulSet != nil {
		in.BlueRevision = s.StatefulSet.Status.CurrentRevision
	}
	if bg == nil {
		return in
	}
	in.ClientSelectsGreen = s.ClientSelects == bg.Green.StatefulSet
	in.BlueVolumes = len(workload.VolumesOf(bg.Blue.StatefulSet, s.Volumes))
	in.GreenExists = s.GreenStatefulSet != nil
	in.GreenVolumes = len(workload.VolumesOf(bg.Green.StatefulSet, s.Volumes))
	if step := bg.CurrentStep; step != nil && step.Attempts > 0 {
		name := StepJobName(c, up.ID, step)
		in.StepJob, in.StepJobName = s.JobOf(name, up.ID), name
	}
	return in
}

// StepJobName names the Job of the current step's attempt.
func StepJobName(c *baov1.OpenBaoCluster, opID string, s *baov1.UpgradeStep) string {
	if s.Action == StepValidate {
		return ValidationJobName(c, opID, s.Attempts)
	}
	return executorjob.JobName(c, executorjob.StepLabelOf(s.Action), opID, s.Pod, s.Attempts)
}

// stepJob builds the Job of the current step: an executor Job that knows the
// addresses of every blue and green member (the leader may be on either side), or
// the validation hook.
func stepJob(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, kind operation.JobKind, image string) (*batchv1.Job, error) {
	up, bg := st.Upgrade, st.BlueGreen
	s := bg.CurrentStep
	addrs := append(executorjob.SetAddresses(c, bg.Blue), executorjob.SetAddresses(c, bg.Green)...)
	switch kind {
	case operation.JobValidate:
		hook := c.Spec.Upgrade.BlueGreen.ValidationHook
		if hook == nil {
			return nil, fmt.Errorf("spec.upgrade.blueGreen.validationHook of %s/%s is gone while the upgrade validates green: set it again, then set the baokeeper.dev/retry annotation", c.Namespace, c.Name)
		}
		return ValidationJob(c, up.ID, s.Attempts, hook, c.GetValidationHookTimeout(), executorjob.SetAddresses(c, bg.Green), workload.CASecretName(c)), nil
	case operation.JobPromote:
		return executorjob.PromoteJob(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	case operation.JobDemote:
		return executorjob.DemoteJob(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	case operation.JobStepDown:
		return executorjob.StepDownJobFor(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	case operation.JobRemovePeer:
		return executorjob.RemovePeerJob(c, up.ID, s.Pod, s.Attempts, image, addrs), nil
	}
	return nil, fmt.Errorf("a blue-green upgrade has no executor Job %q", kind)
}

func greenMembers(c *baov1.OpenBaoCluster, st *baov1.BlueGreenStatus) []string {
	n := workload.NamesFor(c).ForStatefulSet(st.Green.StatefulSet)
	out := make([]string, 0, st.Green.Replicas)
	for i := range st.Green.Replicas {
		out = append(out, n.Member(i))
	}
	return out
}

// pauseOf says whether the upgrade holds at its next step, and why when it is not
// spec.upgrade.paused: a maintenance window that closed holds green's work until
// the point of no return; past it (green has led) the upgrade always finishes.
func pauseOf(s *operation.Snapshot, up *baov1.UpgradeStatus, bg *baov1.BlueGreenStatus) (paused bool, reason string) {
	if s.Object.Spec.Upgrade.Paused && !s.Object.PausedByAnnotation() {
		return true, ""
	}
	if s.Object.UpgradePaused() {
		// A person's pause holds anywhere, past the point of no return too.
		return true, "paused by " + s.Object.PausedBy()
	}
	why := fleet.Hold(s, up)
	if why == "" || PastPointOfNoReturn(bg, s.Cluster) {
		return false, ""
	}
	return true, why
}
