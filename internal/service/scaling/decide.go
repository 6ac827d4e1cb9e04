package scaling

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Action is what the caller must do after a decision.
type Action string

// Actions.
const (
	// ActionBeginStep persists the intent for the next member (status only).
	ActionBeginStep Action = "BeginStep"
	// ActionDeleteVolume deletes the volume claim left by a member that was removed
	// from Raft, before its ordinal comes back: its data must never rejoin.
	ActionDeleteVolume Action = "DeleteVolume"
	// ActionSetReplicas sets the StatefulSet's replicas to Decision.Replicas.
	ActionSetReplicas Action = "SetReplicas"
	// ActionStepDown starts the executor Job that moves leadership off a member
	// that is about to leave.
	ActionStepDown Action = "StepDown"
	// ActionPromote starts the executor Job that makes a caught-up non-voter a voter.
	ActionPromote Action = "Promote"
	// ActionDemote starts the executor Job that makes a leaving voter a non-voter.
	ActionDemote Action = "Demote"
	// ActionRemovePeer starts the executor Job that demotes a member and removes it
	// from the Raft configuration.
	ActionRemovePeer Action = "RemovePeer"
	// ActionStepDownVerified records that leadership moved off a member that is
	// about to leave; its step goes on as StepRemoveMember with a fresh budget of
	// Job attempts.
	ActionStepDownVerified Action = "StepDownVerified"
	// ActionDeletePod deletes the pod of a member that is not in the Raft
	// configuration, after its volume claim: the StatefulSet creates it again with
	// fresh data, and it joins as a non-voter (RejoinMember).
	ActionDeletePod Action = "DeletePod"
	// ActionCompleteStep records the step as done.
	ActionCompleteStep Action = "CompleteStep"
	// ActionComplete ends the operation (status.scaling cleared, lock released).
	ActionComplete Action = "Complete"
	// ActionFail stops the operation with a reason; a retry annotation goes on.
	ActionFail Action = "Fail"
	// ActionWait waits for the world to change; WaitingFor says for what.
	ActionWait Action = "Wait"
)

// Step actions stored in status.scaling.currentStep.action.
const (
	// StepAddMember starts a new member, which joins as a non-voter, catches up and
	// is promoted.
	StepAddMember = baov1.StepAddMember
	// StepPromoteMember promotes a member that is in Raft as a non-voter.
	StepPromoteMember = baov1.StepPromoteMember
	// StepDemoteMember demotes a voter that leaves later, before the leader (which
	// leaves first) hands leadership off: the step-down's successor, which Raft
	// picks, can then only be a voter that stays.
	StepDemoteMember = baov1.StepDemoteMember
	// StepRemoveMember takes a member out of Raft, then removes its pod.
	StepRemoveMember = baov1.StepRemoveMember
	// StepTransferLeadership steps a member that is about to leave down as leader
	// first; once another member leads, the step goes on as StepRemoveMember.
	StepTransferLeadership = baov1.StepTransferLeadership
	// StepRejoinMember brings back a member whose pod serves while it is not in the
	// Raft configuration: its data is deleted once it stayed out for RejoinAfter,
	// then it joins as a non-voter and is promoted like an added member.
	StepRejoinMember = baov1.StepRejoinMember
)

// RejoinAfter is how long a serving member must stay out of the Raft configuration
// before its data is deleted so that it joins again. A member that reappears in the
// configuration meanwhile (an autopilot read that missed it) is left as it is.
//
// Deleting its data loses nothing: a member outside the configuration takes no part
// in any commit, so every acknowledged write is on the voters that remain, and the
// member's own copy is stale from the moment it was removed. OpenBao also refuses to
// let a removed member rejoin with that copy (its Raft state still names the old
// configuration), which is why the data goes rather than the member being asked to
// join again.
const RejoinAfter = 30 * time.Second

// Failure reasons.
const (
	// ReasonStepTimeout means a member did not finish its step within the timeout.
	ReasonStepTimeout = baov1.FailureScalingStepTimeout
	// ReasonJobFailed means an executor Job kept failing.
	ReasonJobFailed = baov1.FailureScalingJobFailed
)

// PromoteAfter is how long a member must have been a healthy non-voter before a
// promotion of its own starts: three times autopilot's server_stabilization_time,
// after which autopilot would have promoted a member that joined normally.
const PromoteAfter = operation.NonVoterPromoteAfter

// JobGrace is how long after a successful executor Job the Raft view may take to
// show its outcome before the Job is tried again. Autopilot applies promotions
// within about 5 s and demotions within about 10 s, and the Job already verified
// them in the Raft configuration.
const JobGrace = 15 * time.Second

// Input is everything Decide needs. It holds no client and performs no I/O.
type Input struct {
	// Scaling is the persisted operation.
	Scaling *baov1.ScalingStatus
	// Cluster is this pass's observation: Members cover every ordinal below
	// max(Target, Replicas); Extra the Raft servers without one.
	Cluster *operation.Cluster
	// Target is spec.replicas.
	Target int32
	// Replicas is the StatefulSet's replicas now; ReplicasCurrent says whether the
	// StatefulSet controller has seen it (observedGeneration caught up).
	Replicas        int32
	ReplicasCurrent bool
	// VolumeExists says whether the data volume claim of the member being added
	// exists (left by an earlier member of that ordinal).
	VolumeExists bool
	// MaxLag is how far behind the leader a new member may be before it is promoted.
	MaxLag uint64
	// StepTimeout bounds a step.
	StepTimeout time.Duration
	// Job is the executor Job of the current attempt.
	Job operation.Job
	// Names gives a member's name for an ordinal.
	Names func(ordinal int32) string
}

// Decision is what to do next and why.
type Decision struct {
	Action Action
	// Step is the step action of a BeginStep.
	Step baov1.StepAction
	// Pod is the member the action is about.
	Pod string
	// Replicas is the StatefulSet replicas of a SetReplicas.
	Replicas int32
	// WaitingFor is the status message.
	WaitingFor string
	// Reason and Message describe a failure.
	Reason  baov1.FailureReason
	Message string
	// RequeueAfter is set when the next event is a timer.
	RequeueAfter time.Duration
}

// Needed reports whether the cluster's membership differs from spec.replicas: a
// member to add or remove, a Raft server without a member, or a member that is in
// Raft as a caught-up non-voter. It needs a trustworthy Raft view.
func Needed(in Input) bool {
	if !in.Cluster.AutopilotKnown {
		return false
	}
	d := next(in)
	return d.Action != ActionComplete
}

// NonVoterRecheck is how often a member that is in Raft as a non-voter but not yet
// healthy is looked at again while nothing else runs.
const NonVoterRecheck = 5 * time.Second

// NextPromotion is how long until a member that is in Raft as a non-voter may be
// promoted (it has been healthy for PromoteAfter), or until an unhealthy one is
// looked at again; 0 when no member waits for a promotion. A cluster at rest has no
// event that would wake the upgrade manager when that time comes: this is its timer,
// and it bounds how long a member of a new cluster, or one that rejoined after losing
// its volume, stays a non-voter.
func NextPromotion(in Input) time.Duration {
	c := in.Cluster
	if !c.AutopilotKnown {
		return 0
	}
	next := time.Duration(0)
	for _, m := range c.Members {
		if int32(m.Ordinal) >= in.Target || !m.InRaft || m.Voter || !m.PodReady {
			continue
		}
		wait := NonVoterRecheck
		if m.Healthy && !m.StableSince.IsZero() {
			wait = max(m.StableSince.Add(PromoteAfter).Sub(c.Now), time.Second)
		}
		if next == 0 || wait < next {
			next = wait
		}
	}
	return next
}

// Requested reports whether the spec asks for a size the StatefulSet does not run yet
// (or the StatefulSet controller has not caught up with it). It needs no Raft view:
// while Needed cannot be decided (autopilot unreadable, a member restarting), a
// requested change is what the upgrade manager polls for, because nothing else wakes
// it (its watch reacts to generation and annotation changes only).
func Requested(in Input) bool {
	return in.Target != in.Replicas || !in.ReplicasCurrent
}

// Next is the step a new operation would begin with, for the words of its start.
func Next(in Input) Decision { return next(in) }

// Decide is the scaling state machine: given the persisted operation and one
// observation, the single next action. Like the rolling one, it is idempotent: an
// intent whose outcome is visible moves on instead of acting again.
func Decide(in Input) Decision {
	s := in.Scaling
	if s.Failure != nil {
		return Decision{Action: ActionWait, Pod: s.Failure.Pod,
			WaitingFor: fmt.Sprintf("scaling failed (%s): fix the cause, then set the baokeeper.dev/retry annotation to a new value", s.Failure.Reason)}
	}
	st := s.CurrentStep
	if st == nil || st.Pod == "" {
		if !in.Cluster.AutopilotKnown {
			// Neither the next step nor the end is decided without a trustworthy
			// Raft view: "nothing left to do" must be seen, not assumed.
			return Decision{Action: ActionWait, WaitingFor: "waiting for a trustworthy read of autopilot state"}
		}
		return next(in)
	}
	if st.StartedAt != nil && in.StepTimeout > 0 && in.Cluster.Now.Sub(st.StartedAt.Time) > in.StepTimeout {
		return fail(in, ReasonStepTimeout, fmt.Sprintf("%s did not finish %s within %s: %s", st.Pod, st.Action, in.StepTimeout, lastWait(st)))
	}
	switch st.Action {
	case StepRemoveMember, StepTransferLeadership:
		return decideRemove(in, st)
	case StepDemoteMember:
		return decideDemote(in, st)
	case StepRejoinMember:
		return decideRejoin(in, st)
	default:
		return decideAdd(in, st)
	}
}

// next picks the next step, in an order that never costs quorum: Raft servers that
// must go first (dead voters raise the tolerance when they go, and a new voter is
// only added to a healthy majority), then members to promote, then members to add.
func next(in Input) Decision {
	c := in.Cluster
	if rm := toRemove(in); len(rm) > 0 {
		if rm[0] == c.Leader {
			for _, other := range rm[1:] {
				if m := c.Member(other); m != nil && m.InRaft && m.Voter {
					return begin(StepDemoteMember, other, fmt.Sprintf("demoting %s, which leaves too, so that the leader %s hands off to a member that stays", other, c.Leader))
				}
			}
		}
		return begin(StepRemoveMember, rm[0], fmt.Sprintf("removing %s: spec.replicas is %d", rm[0], in.Target))
	}
	for _, m := range c.Members {
		// A member that autopilot is about to promote (a normal join: non-voter for
		// server_stabilization_time, 10 s) is left to it; a non-voter that stays one
		// while healthy is a permanent one (it joined as a non-voter) and waits for us.
		stable := m.Healthy && !m.StableSince.IsZero() && c.Now.Sub(m.StableSince) >= PromoteAfter
		if int32(m.Ordinal) < in.Target && m.InRaft && !m.Voter && m.PodReady && stable {
			return begin(StepPromoteMember, m.Name, fmt.Sprintf("promoting %s, which is in Raft as a non-voter", m.Name))
		}
	}
	for _, m := range c.Members {
		if outOfRaft(in, m) {
			return begin(StepRejoinMember, m.Name, fmt.Sprintf("%s serves but is not in the Raft configuration: bringing it back as a voter", m.Name))
		}
	}
	if in.Replicas < in.Target {
		name := in.Names(in.Replicas)
		return begin(StepAddMember, name, fmt.Sprintf("adding %s (%d of %d members)", name, in.Replicas+1, in.Target))
	}
	return Decision{Action: ActionComplete, WaitingFor: fmt.Sprintf("%d members, each a voter", in.Target)}
}

// StepFor is the step action a member's removal begins with, planned on what is
// observed: a leader hands leadership off first.
func StepFor(c *operation.Cluster, step baov1.StepAction, pod string) baov1.StepAction {
	if step == StepRemoveMember && c.Leader == pod {
		return StepTransferLeadership
	}
	return step
}

// JobStep names the executor Job kind of a step action, for the Job's name.
func JobStep(stepAction baov1.StepAction) Action {
	switch stepAction {
	case StepTransferLeadership:
		return ActionStepDown
	case StepRemoveMember:
		return ActionRemovePeer
	case StepDemoteMember:
		return ActionDemote
	default:
		return ActionPromote
	}
}

func begin(step baov1.StepAction, pod, why string) Decision {
	return Decision{Action: ActionBeginStep, Step: step, Pod: pod, WaitingFor: why}
}

// toRemove lists what must leave, first to go first: Raft servers that match no
// member, then members at or above spec.replicas that are in Raft or have a pod (or
// whose ordinal the StatefulSet still counts), highest ordinal first.
func toRemove(in Input) []string {
	var out []string
	for _, m := range in.Cluster.Extra {
		out = append(out, m.Name)
	}
	var members []operation.Member
	for _, m := range in.Cluster.Members {
		if int32(m.Ordinal) >= in.Target && (m.InRaft || m.PodExists || int32(m.Ordinal) < in.Replicas) {
			members = append(members, m)
		}
	}
	slices.SortFunc(members, func(a, b operation.Member) int { return b.Ordinal - a.Ordinal })
	for _, m := range members {
		out = append(out, m.Name)
	}
	return out
}

func decideAdd(in Input, st *baov1.UpgradeStep) Decision {
	c := in.Cluster
	m := c.Member(st.Pod)
	if st.Action == StepAddMember {
		ord := ordinalOf(st.Pod)
		if in.Replicas <= ord {
			// A volume left by a member that is no longer in Raft holds data that
			// must not rejoin. A member that is still in Raft (its pod went because
			// the StatefulSet was scaled by hand) comes back with its own data.
			if in.VolumeExists && (m == nil || (!m.PodExists && !m.InRaft)) {
				return Decision{Action: ActionDeleteVolume, Pod: st.Pod,
					WaitingFor: fmt.Sprintf("deleting the volume %s left behind, so that %s joins with fresh data", st.Pod, st.Pod)}
			}
			return Decision{Action: ActionSetReplicas, Pod: st.Pod, Replicas: ord + 1,
				WaitingFor: fmt.Sprintf("starting %s (StatefulSet replicas %d)", st.Pod, ord+1)}
		}
	}
	if m == nil || !m.PodExists || m.PodTerminating {
		return wait(st, fmt.Sprintf("waiting for %s to be created by the StatefulSet controller", st.Pod))
	}
	if !m.PodReady || !m.Initialized || m.Sealed {
		return wait(st, fmt.Sprintf("waiting for %s to start, join and unseal%s", st.Pod, m.PodSays()))
	}
	if !c.AutopilotKnown {
		return wait(st, "waiting for a trustworthy read of autopilot state")
	}
	if !m.InRaft {
		return wait(st, fmt.Sprintf("waiting for %s to join Raft as a non-voter", st.Pod))
	}
	if m.Voter {
		if !m.Healthy {
			return wait(st, fmt.Sprintf("%s is a voter; waiting for autopilot to report it healthy", st.Pod))
		}
		return Decision{Action: ActionCompleteStep, Pod: st.Pod, WaitingFor: fmt.Sprintf("%s is a healthy voter", st.Pod)}
	}
	lag := uint64(0)
	if c.LeaderIndex > m.LastIndex {
		lag = c.LeaderIndex - m.LastIndex
	}
	if !m.Healthy || lag > in.MaxLag {
		return wait(st, fmt.Sprintf("waiting for %s to catch up as a non-voter (index %d behind, limit %d; healthy %t)", st.Pod, lag, in.MaxLag, m.Healthy))
	}
	return jobStep(in, st, ActionPromote, fmt.Sprintf("promoting %s to voter", st.Pod), func() (bool, string) {
		// The member passed its gates (healthy, within maxLag of the leader) on this
		// very observation: it counts as healthy, the rest of the budget as usual.
		return operation.Project(c, operation.Change{AddVoters: 1, AddHealthy: 1}).Allows()
	})
}

// outOfRaft reports whether m is a member the spec keeps, whose pod runs an
// initialized, unsealed OpenBao that the Raft configuration does not list: one
// removed by hand or by a tool while its pod kept running. A member that lost its
// volume is not one: it starts uninitialized and joins by itself.
func outOfRaft(in Input, m operation.Member) bool {
	ord := int32(m.Ordinal)
	return ord < in.Target && ord < in.Replicas && m.PodExists && !m.PodTerminating && m.PodReady &&
		m.Initialized && !m.Sealed && !m.InRaft && heldElsewhere(in.Cluster, m.Name) == ""
}

// heldElsewhere says why the data of member may not be deleted, or "" when another
// member of the cluster leads a configuration whose healthy voters are a majority:
// then every committed write is on them, and member's copy is not needed. It guards
// against a view in which the member is out of the configuration because the
// configuration is not the cluster's own (a snapshot of another cluster just
// restored, whose voters are that cluster's), where its data may be the only copy.
func heldElsewhere(c *operation.Cluster, member string) string {
	leader := c.Member(c.Leader)
	if c.Leader == "" || c.Leader == member || leader == nil || !leader.InRaft || !leader.Voter || !leader.PodExists {
		return fmt.Sprintf("no other member of the cluster leads (leader %q)", c.Leader)
	}
	if ok, why := operation.Project(c, operation.Change{}).Allows(); !ok {
		return why
	}
	return ""
}

// decideRejoin brings a member that is out of the Raft configuration back: it waits
// RejoinAfter from the step's start for the member to reappear, then deletes its
// volume claim and its pod (the pod the step began with, never the one created
// after), and goes on as an added member does: join as a non-voter, catch up, be
// promoted.
func decideRejoin(in Input, st *baov1.UpgradeStep) Decision {
	c := in.Cluster
	if !c.AutopilotKnown {
		return wait(st, "waiting for a trustworthy read of autopilot state")
	}
	m := c.Member(st.Pod)
	if m == nil || m.InRaft || !m.PodExists || m.PodTerminating || m.UID != st.PodUID {
		// Back in the configuration, or its pod already replaced: the rest is an
		// added member's way.
		return decideAdd(in, st)
	}
	if at := st.StartedAt.Add(RejoinAfter); c.Now.Before(at) {
		d := wait(st, fmt.Sprintf("%s serves but is not in the Raft configuration; if it is still out at %s, its data is deleted and it joins again as a non-voter",
			st.Pod, at.UTC().Format(time.RFC3339)))
		d.RequeueAfter = max(at.Sub(c.Now), time.Second)
		return d
	}
	if why := heldElsewhere(c, st.Pod); why != "" {
		// Checked again before anything is deleted, on this very observation.
		return wait(st, fmt.Sprintf("%s is not in the Raft configuration, but its data is kept: %s", st.Pod, why))
	}
	if in.VolumeExists {
		return Decision{Action: ActionDeleteVolume, Pod: st.Pod,
			WaitingFor: fmt.Sprintf("deleting the volume of %s, which has been out of the Raft configuration since %s, so that it joins again with fresh data",
				st.Pod, st.StartedAt.UTC().Format(time.RFC3339))}
	}
	return Decision{Action: ActionDeletePod, Pod: st.Pod,
		WaitingFor: fmt.Sprintf("deleting the pod of %s, whose volume is deleted, so that it starts with fresh data and joins as a non-voter", st.Pod)}
}

func decideDemote(in Input, st *baov1.UpgradeStep) Decision {
	c := in.Cluster
	m := c.Member(st.Pod)
	if !c.AutopilotKnown || c.Leader == "" {
		return wait(st, "waiting for a trustworthy read of autopilot state to find the leader")
	}
	if m == nil || !m.InRaft || !m.Voter {
		return Decision{Action: ActionCompleteStep, Pod: st.Pod, WaitingFor: fmt.Sprintf("%s is a non-voter", st.Pod)}
	}
	if c.Leader == st.Pod {
		// It leads now (an election): it is removed first, with a step-down of its
		// own; the plan is made again from what is observed.
		return Decision{Action: ActionCompleteStep, Pod: st.Pod, WaitingFor: fmt.Sprintf("%s leads now; planning again", st.Pod)}
	}
	return jobStep(in, st, ActionDemote, fmt.Sprintf("demoting %s to non-voter", st.Pod), func() (bool, string) {
		return operation.Project(c, operation.Change{Remove: st.Pod}).Allows()
	})
}

func decideRemove(in Input, st *baov1.UpgradeStep) Decision {
	c := in.Cluster
	m := c.Member(st.Pod)
	if m != nil && m.InRaft {
		if !c.AutopilotKnown || c.Leader == "" {
			return wait(st, "waiting for a trustworthy read of autopilot state to find the leader")
		}
		if c.Leader == st.Pod && st.Action != StepTransferLeadership {
			// It leads (again): never demote or remove a leader; hand leadership off.
			return Decision{Action: ActionBeginStep, Step: StepTransferLeadership, Pod: st.Pod,
				WaitingFor: fmt.Sprintf("%s leads; moving leadership off it before it leaves", st.Pod)}
		}
		if c.Leader != st.Pod && st.Action == StepTransferLeadership {
			return Decision{Action: ActionStepDownVerified, Pod: st.Pod,
				WaitingFor: fmt.Sprintf("leadership moved from %s to %s", st.Pod, c.Leader)}
		}
		if c.Leader == st.Pod {
			return jobStep(in, st, ActionStepDown, fmt.Sprintf("asking %s to step down as leader before it leaves", st.Pod), func() (bool, string) {
				p := operation.Project(c, operation.Change{Remove: st.Pod})
				if len(p.Unhealthy) > 0 {
					return false, "voters not healthy: " + p.UnhealthyWords
				}
				return p.Allows()
			})
		}
		return jobStep(in, st, ActionRemovePeer, fmt.Sprintf("removing %s from Raft (demote, then remove-peer)", st.Pod), func() (bool, string) {
			return operation.Project(c, operation.Change{Remove: st.Pod}).Allows()
		})
	}
	if !c.AutopilotKnown {
		return wait(st, "waiting for a trustworthy read of autopilot state")
	}
	ord := ordinalOf(st.Pod)
	if ord >= 0 && in.Replicas > ord {
		if in.Replicas != ord+1 {
			return wait(st, fmt.Sprintf("waiting to remove the pod of %s: StatefulSet replicas is %d, and members go from the highest ordinal", st.Pod, in.Replicas))
		}
		return Decision{Action: ActionSetReplicas, Pod: st.Pod, Replicas: ord,
			WaitingFor: fmt.Sprintf("%s left Raft; removing its pod (StatefulSet replicas %d); its volume is kept", st.Pod, ord)}
	}
	if m != nil && m.PodExists {
		return wait(st, fmt.Sprintf("%s left Raft; waiting for its pod to go", st.Pod))
	}
	return Decision{Action: ActionCompleteStep, Pod: st.Pod, WaitingFor: fmt.Sprintf("%s left Raft and its pod is gone", st.Pod)}
}

// jobStep drives one executor Job of a step: start it within the quorum budget,
// wait for it, give the Raft view JobGrace to show its outcome, retry a failure
// after OpenBao's cooldown, and fail after the attempts. The outcome is read from
// the Raft view, which moves the step on; the Job's own word only decides retries.
func jobStep(in Input, st *baov1.UpgradeStep, act Action, what string, budget func() (bool, string)) Decision {
	switch in.Job.Phase {
	case operation.JobRunning:
		return wait(st, fmt.Sprintf("%s: waiting for the executor Job", what))
	case operation.JobSucceeded:
		if w := in.Job.FinishedAt.Add(JobGrace).Sub(in.Cluster.Now); w > 0 {
			return Decision{Action: ActionWait, Pod: st.Pod, RequeueAfter: w, WaitingFor: fmt.Sprintf("%s: the Job succeeded; waiting for the Raft view to show it", what)}
		}
	case operation.JobFailed:
		if w := in.Job.FinishedAt.Add(operation.StepDownCooldown).Sub(in.Cluster.Now); w > 0 {
			return Decision{Action: ActionWait, Pod: st.Pod, RequeueAfter: w, WaitingFor: fmt.Sprintf("%s: the Job failed (%s); retrying after 10 s", what, in.Job.Message)}
		}
	}
	if operation.AttemptsExhausted(st) {
		msg := fmt.Sprintf("%s did not take effect after %d executor Job attempts", what, st.Attempts)
		if in.Job.Message != "" {
			msg += ": " + in.Job.Message
		}
		return fail(in, ReasonJobFailed, msg)
	}
	if ok, why := budget(); !ok {
		return wait(st, fmt.Sprintf("%s waits for the quorum budget: %s", what, why))
	}
	return Decision{Action: act, Pod: st.Pod, WaitingFor: what}
}

func wait(st *baov1.UpgradeStep, why string) Decision {
	return Decision{Action: ActionWait, Pod: st.Pod, WaitingFor: why}
}

func fail(in Input, reason baov1.FailureReason, msg string) Decision {
	s := in.Scaling
	done := "none"
	if len(s.Completed) > 0 {
		done = strings.Join(s.Completed, ", ")
	}
	full := fmt.Sprintf("%s; done so far: %s; spec.replicas is %d", msg, done, in.Target)
	return Decision{Action: ActionFail, Pod: s.CurrentStep.Pod, Reason: reason, Message: full, WaitingFor: "scaling failed: " + msg}
}

func lastWait(st *baov1.UpgradeStep) string {
	if st.WaitingFor == "" {
		return "no progress was observed"
	}
	return "last " + st.WaitingFor
}

// ordinalOf is the StatefulSet ordinal at the end of a member name, or -1.
func ordinalOf(name string) int32 {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}
