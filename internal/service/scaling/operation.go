package scaling

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Event reasons of scaling.
const (
	EventStarted       baov1.Reason = "ScalingStarted"
	EventStep          baov1.Reason = "ScalingStep"
	EventFailed        baov1.Reason = "ScalingFailed"
	EventCompleted     baov1.Reason = "ScalingCompleted"
	EventVolumeDeleted baov1.Reason = "VolumeDeleted"
)

// Poll is how soon a scaling that waits on OpenBao or a pod looks again.
const Poll = 2 * time.Second

// persistRequeue is how soon a pass that only recorded an intent runs again.
const persistRequeue = 200 * time.Millisecond

// Operation is a change of membership through Raft (spec.replicas, or a member in
// Raft as a non-voter): it starts one when none runs and one is needed, and drives
// it one action per pass.
type Operation struct{}

// Name implements operation.Operation.
func (Operation) Name() string { return operation.OperationScaling }

// InputOf is what Decide needs, from the snapshot.
func InputOf(s *operation.Snapshot) Input {
	c := s.Object
	n := workload.NamesFor(c)
	in := Input{
		Scaling: c.Status.Scaling, Cluster: s.Cluster, Target: c.GetReplicas(),
		Replicas: s.Replicas(), ReplicasCurrent: s.StatefulSetCurrent(),
		MaxLag:      c.GetMaxLagEntries(),
		StepTimeout: c.GetStepTimeout(),
		Names:       n.Member,
	}
	if sc := c.Status.Scaling; sc != nil && sc.CurrentStep != nil {
		st := sc.CurrentStep
		if st.Attempts > 0 {
			in.Job = s.JobOf(JobName(c, sc), sc.ID)
		}
		in.VolumeExists = s.HasVolume(workload.DataVolume + "-" + st.Pod)
	}
	return in
}

// ShouldStart reports whether a scaling starts this pass: none runs, the cluster
// formed and reports its version, the StatefulSet controller caught up, the
// membership differs from the spec (on a trustworthy Raft view), and no other
// operation holds the lock.
func ShouldStart(s *operation.Snapshot) bool {
	c := s.Object
	if c.Status.Scaling != nil || c.Status.CurrentVersion == "" || s.StatefulSet == nil || !s.StatefulSetCurrent() {
		return false
	}
	return Needed(InputOf(s)) && operation.HeldByOther(&c.Status, operation.OperationScaling) == nil
}

// Wake is how soon a cluster where no scaling runs must be looked at again, when
// nothing else would wake the upgrade manager: a requested change that cannot be
// decided yet (autopilot unreadable, a member restarting), or a non-voter that is
// not stable yet (a new cluster at rest, a member that rejoined). 0 for never.
func Wake(s *operation.Snapshot) time.Duration {
	if s.Object.Status.Scaling != nil || s.StatefulSet == nil {
		return 0
	}
	in := InputOf(s)
	if Requested(in) {
		return Poll
	}
	return NextPromotion(in)
}

// Decide implements operation.Operation.
func (Operation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	in := InputOf(s)
	if st.Scaling == nil {
		return start(s, st, in)
	}
	sc := st.Scaling
	sc.TargetReplicas = in.Target
	in.Scaling = sc
	d := Decide(in)
	Record(sc, d, s.Cluster)
	p := operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Member: d.Pod, WaitingFor: d.WaitingFor,
		Reason: d.Reason, Message: d.Message, RequeueAfter: persistRequeue}}
	switch d.Action {
	case ActionSetReplicas:
		p.Kind, p.Object, p.Replicas = operation.KindApply, operation.ObjectReplicas, d.Replicas
		p.Events = append(p.Events, operation.Normal(EventStep, d.WaitingFor))
	case ActionDeleteVolume:
		p.Kind, p.Object, p.Volumes = operation.KindDelete, operation.ObjectVolume, []string{workload.DataVolume + "-" + d.Pod}
		p.RequeueAfter = Poll
		p.Events = append(p.Events, operation.Normal(EventVolumeDeleted, fmt.Sprintf(
			"Deleted the volume claim %s-%s, left by a member that was removed from Raft: %s joins with fresh data", workload.DataVolume, d.Pod, d.Pod)))
	case ActionDeletePod:
		p.Kind, p.Object = operation.KindDelete, operation.ObjectPod
		p.RequeueAfter = Poll
		p.Events = append(p.Events, operation.Normal(EventStep, d.WaitingFor))
	case ActionStepDown, ActionPromote, ActionRemovePeer, ActionDemote:
		p.Kind = operation.KindCreateJob
		p.Job = Job(c, sc, max(c.GetReplicas(), s.Replicas()), s.ExecutorImage)
		p.JobEvent = &operation.Event{Reason: EventStep, Message: fmt.Sprintf("%s (attempt %d)", d.WaitingFor, sc.CurrentStep.Attempts)}
	case ActionStepDownVerified:
		p.Kind, p.LeaderTransferred = operation.KindPersist, true
		p.Events = append(p.Events, operation.Normal(EventStep, d.WaitingFor))
	case ActionCompleteStep:
		p.Kind = operation.KindPersist
		p.Events = append(p.Events, operation.Normal(EventStep, d.WaitingFor))
	case ActionComplete:
		msg := fmt.Sprintf("Scaled from %d to %d members: %s", sc.FromReplicas, sc.TargetReplicas, d.WaitingFor)
		if sc.FromReplicas == sc.TargetReplicas {
			msg = fmt.Sprintf("Every member votes: %s", d.WaitingFor)
		}
		p.Kind = operation.KindComplete
		p.Events = append(p.Events, operation.Normal(EventCompleted, msg))
		history.EndScaling(st, baov1.OutcomeSucceeded, "", msg, s.Now)
		st.Scaling = nil
		operation.Release(st, operation.OperationScaling)
	case ActionFail:
		p.Kind, p.RequeueAfter = operation.KindFail, 0
		p.Events = append(p.Events, operation.Warning(EventFailed, d.Message))
	case ActionWait:
		p.Kind, p.RequeueAfter = operation.KindWait, d.RequeueAfter
		if sc.Failure != nil {
			// A person retries; the annotation wakes the upgrade manager.
			p.Kind, p.RequeueAfter = operation.KindNone, 0
		}
	default: // ActionBeginStep
		p.Kind = operation.KindPersist
	}
	return p
}

// start begins a scaling: the lock and the operation's status in one write, before
// any step.
func start(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, in Input) operation.Plan {
	c := s.Object
	if err := operation.Acquire(st, operation.OperationScaling, operation.HolderUpgradeManager,
		fmt.Sprintf("scaling from %d to %d members", in.Replicas, in.Target), s.Now); err != nil {
		return operation.Nothing()
	}
	st.Scaling = Start(operation.ID(c, fmt.Sprintf("scale-to-%d", in.Target), s.Now), in.Replicas, in.Target, s.Now)
	st.Scaling.WaitingFor = "planning"
	what := fmt.Sprintf("Scaling from %d to %d members through Raft, one member at a time", in.Replicas, in.Target)
	if in.Replicas == in.Target {
		what = fmt.Sprintf("Making every member a voter: %s", Next(in).WaitingFor)
	}
	return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue},
		Events: []operation.Event{operation.Normal(EventStarted, what)}}
}

// JobName is the name of the current step's executor Job.
func JobName(c *baov1.OpenBaoCluster, s *baov1.ScalingStatus) string {
	st := s.CurrentStep
	return executorjob.JobName(c, executorjob.StepLabelOf(st.Action), s.ID, st.Pod, st.Attempts)
}

// Job builds the current step's executor Job; members lists every ordinal that may
// hold the leader.
func Job(c *baov1.OpenBaoCluster, s *baov1.ScalingStatus, members int32, image string) *batchv1.Job {
	st := s.CurrentStep
	addrs := executorjob.MemberAddressesN(c, members)
	switch JobStep(st.Action) {
	case ActionStepDown:
		return executorjob.StepDownJobFor(c, s.ID, st.Pod, st.Attempts, image, addrs)
	case ActionRemovePeer:
		return executorjob.RemovePeerJob(c, s.ID, st.Pod, st.Attempts, image, addrs)
	case ActionDemote:
		return executorjob.DemoteJob(c, s.ID, st.Pod, st.Attempts, image, addrs)
	default:
		return executorjob.PromoteJob(c, s.ID, st.Pod, st.Attempts, image, addrs)
	}
}
