package rolling

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Operation is a rolling upgrade, or a rollout of the pod template, whose snapshot
// (if any) is taken: one Decide over the snapshot, one action.
type Operation struct{}

// Name implements operation.Operation.
func (Operation) Name() string { return "RollingUpgrade" }

// Decide implements operation.Operation.
func (Operation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	up := st.Upgrade
	in := Input{
		Upgrade: up, Cluster: s.Cluster, TargetImage: up.TargetImage, TargetVersion: up.TargetVersion,
		PauseReason:   fleet.Hold(s, up),
		StepTimeout:   c.GetStepTimeout(),
		SettleTime:    c.GetSettleTime(),
		MaxLag:        c.GetMaxLagEntries(),
		LeaderHandoff: c.GetLeaderHandoff(),
		CanPromote:    up.ID != "",
	}
	if s.StatefulSet != nil {
		in.TemplateImage = workload.ContainerImage(&s.StatefulSet.Spec.Template.Spec)
	}
	if step := up.CurrentStep; step != nil && step.Action == StepTransferLeadership && step.Attempts > 0 {
		in.StepDownJob = s.JobOf(stepDownJobName(c, up), up.ID)
	}
	if step := up.CurrentStep; step != nil && step.Action == StepReplaceMember && step.Attempts > 0 && up.ID != "" {
		in.PromoteJob = s.JobOf(executorjob.JobName(c, executorjob.StepPromote, up.ID, step.Pod, step.Attempts), up.ID)
	}

	in.Paused = in.PauseReason != ""
	d := Decide(in)
	Record(up, d, s.Cluster, up.TargetImage, c.GetLeaderHandoff())
	up.Progress = progress(up)
	a := ToAction(d, up.TargetImage, up.TargetVersion)
	if up.Kind == baov1.OperationRollout {
		a = rolloutWords(a, d)
	}
	p := upgrade.PlanOf(st, a, s.Now, nil)
	switch {
	case a.Kind == operation.KindApply && a.Object == operation.ObjectPodTemplate:
		p.Image = up.TargetImage
	case a.Kind == operation.KindCreateJob && a.Job == operation.JobStepDown:
		p.Job = stepDownJob(c, up, s.ExecutorImage)
	case a.Kind == operation.KindCreateJob && a.Job == operation.JobPromote:
		p.Job = executorjob.PromoteJob(c, up.ID, a.Member, up.CurrentStep.Attempts, s.ExecutorImage, executorjob.MemberAddresses(c))
	}
	return p
}

// rolloutWords says what a rolling step does for a rollout, which restarts members
// on what they run: no member is "upgraded" or "replaced with" an image.
func rolloutWords(a operation.Action, d Decision) operation.Action {
	switch d.Action {
	case ActionDeletePod:
		a.Event = fmt.Sprintf("Restarting %s on the new pod template", d.Pod)
	case ActionCompleteMember:
		a.Event = fmt.Sprintf("%s runs the new pod template", d.Pod)
	}
	return a
}

// progress is the strategy-neutral progress of a rolling upgrade: members replaced
// of the plan's.
func progress(up *baov1.UpgradeStatus) *baov1.UpgradeProgress {
	p := &baov1.UpgradeProgress{Stage: "Start", Completed: int32(len(up.CompletedPods))}
	if up.Plan != nil {
		p.Total = int32(len(up.Plan.Pods))
	}
	if st := up.CurrentStep; st != nil && st.Action != "" {
		p.Stage = string(st.Action)
	}
	return p
}

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
