package rolling

import (
	"fmt"
	"slices"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// Action is what the caller must do after a decision.
type Action string

// Actions, in the order a member usually goes through them.
const (
	// ActionUpdateTemplate sets the StatefulSet's pod template to the target image.
	// With the OnDelete strategy this restarts nothing by itself.
	ActionUpdateTemplate Action = "UpdateTemplate"
	// ActionBeginStep persists the intent for the next member (status only).
	ActionBeginStep Action = "BeginStep"
	// ActionStepDown starts the executor Job that moves leadership off the member.
	ActionStepDown Action = "StepDown"
	// ActionStepDownVerified records that leadership moved off the member (onto an
	// upgraded member, or by an unplanned election onto any other).
	ActionStepDownVerified Action = "StepDownVerified"
	// ActionDeletePod deletes the member's pod so it comes back on the new template.
	ActionDeletePod Action = "DeletePod"
	// ActionPromote starts the executor Job that promotes a replaced member that
	// came back as a non-voter (it lost its data and joined again: every join after
	// the cluster formed is as a non-voter, which autopilot never promotes).
	ActionPromote Action = "Promote"
	// ActionGatesPassed records when every gate first held (the settle time starts).
	ActionGatesPassed Action = "GatesPassed"
	// ActionCompleteMember records the member as upgraded.
	ActionCompleteMember Action = "CompleteMember"
	// ActionComplete finishes the upgrade: currentVersion and cleared status, in one write.
	ActionComplete Action = "Complete"
	// ActionFail stops the upgrade with a reason; members already upgraded stay.
	ActionFail Action = "Fail"
	// ActionHold waits at a safe point because spec.upgrade.paused is true.
	ActionHold Action = "Hold"
	// ActionWait waits for the world to change; WaitingFor says for what.
	ActionWait Action = "Wait"
)

// Step actions stored in status.upgrade.currentStep.action.
const (
	// StepTransferLeadership is the step of the leader before its replacement.
	StepTransferLeadership = upgrade.StepTransferLeadership
	// StepReplaceMember is the replacement of a member's pod.
	StepReplaceMember = upgrade.StepReplaceMember
	// StepShutdownLeader is the leader's step with leaderHandoff Shutdown: its pod is
	// deleted once every other voter runs the target, and its graceful shutdown hands
	// leadership over.
	StepShutdownLeader = baov1.StepShutdownLeader
)

// Failure reasons.
const (
	// ReasonStepTimeout means a member did not pass its gates within stepTimeout.
	ReasonStepTimeout = baov1.FailureStepTimeout
	// ReasonStepDownFailed means leadership could not be moved off the leader.
	ReasonStepDownFailed = baov1.FailureStepDownFailed
	// ReasonPromoteFailed means a replaced member that came back as a non-voter could
	// not be promoted.
	ReasonPromoteFailed = baov1.FailurePromoteFailed
)

// MaxStepDownAttempts bounds step-down Jobs per upgrade step until a retry.
const MaxStepDownAttempts = operation.DefaultMaxJobAttempts

// LeaderChangeGrace is how long after a successful step-down Job the new leader may
// take to show up in autopilot before the step-down is tried again.
const LeaderChangeGrace = 15 * time.Second

// Input is everything Decide needs: the persisted upgrade status, one observation of
// the cluster, and the settings. It holds no client and performs no I/O.
type Input struct {
	Upgrade       *baov1.UpgradeStatus
	Cluster       *operation.Cluster
	TargetImage   string
	TargetVersion string
	// TemplateImage is the image of the StatefulSet's pod template now.
	TemplateImage string
	Paused        bool
	// PauseReason says why it holds when Paused (spec.upgrade.paused, or a
	// maintenance window that closed); "" says spec.upgrade.paused.
	PauseReason string
	StepTimeout time.Duration
	SettleTime  time.Duration
	MaxLag      uint64
	// StepDownJob is the executor Job of the current step-down attempt.
	StepDownJob operation.Job
	// PromoteJob is the executor Job of the current promotion attempt (a replaced
	// member that lost its data and joined again as a non-voter).
	PromoteJob operation.Job
	// CanPromote says whether promote Jobs can be named for this upgrade (it has an
	// ID; upgrades started by an earlier release have none and wait instead).
	CanPromote bool
	// LeaderHandoff is how the leader's step moves leadership
	// (spec.upgrade.rolling.leaderHandoff); empty means baov1.DefaultLeaderHandoff.
	LeaderHandoff baov1.LeaderHandoff
}

// Decision is what to do next and why.
type Decision struct {
	Action Action
	// Pod is the member the action is about.
	Pod string
	// WaitingFor is the status message: what the upgrade waits for, in words.
	WaitingFor string
	// Reason and Message describe a failure (ActionFail).
	Reason  baov1.FailureReason
	Message string
	// RequeueAfter is set when the next event is a timer (settle time, cooldown, timeout).
	RequeueAfter time.Duration
}

// Plan orders the members for a rolling upgrade: followers from the highest ordinal
// down, then the leader, so that exactly one planned leadership change happens, onto
// a member that already runs the target version.
func Plan(c *operation.Cluster) []string {
	var order []string
	for i := len(c.Members) - 1; i >= 0; i-- {
		if c.Members[i].Name != c.Leader {
			order = append(order, c.Members[i].Name)
		}
	}
	if c.Leader != "" {
		order = append(order, c.Leader)
	}
	return order
}

// Decide is the rolling state machine: given the persisted intent and one observation,
// it returns the single next action. It is idempotent: an intent whose outcome is
// already visible (the pod was deleted, leadership already moved) moves on instead of
// acting again, which is what makes a restart of the operator at any point safe.
func Decide(in Input) Decision {
	up, c := in.Upgrade, in.Cluster
	if up.Failure != nil {
		return Decision{Action: ActionWait, Pod: up.Failure.Pod,
			WaitingFor: fmt.Sprintf("upgrade failed (%s): fix the cause, then set the baokeeper.dev/retry annotation to a new value", up.Failure.Reason)}
	}
	if in.TemplateImage != in.TargetImage {
		return Decision{Action: ActionUpdateTemplate, WaitingFor: fmt.Sprintf("updating the pod template to %s", in.TargetImage)}
	}
	step := up.CurrentStep
	if step == nil || step.Pod == "" || slices.Contains(up.CompletedPods, step.Pod) {
		return decideNext(in)
	}
	// The step timeout bounds the wait for the gates; the settle time after them is
	// not counted, so a settleTime longer than stepTimeout cannot fail a member that
	// is done.
	if step.GatesPassedAt == nil && step.StartedAt != nil && in.StepTimeout > 0 && c.Now.Sub(step.StartedAt.Time) > in.StepTimeout {
		return failStep(in, ReasonStepTimeout, fmt.Sprintf("%s did not finish within %s: %s", step.Pod, in.StepTimeout, waitingSummary(step)))
	}
	switch step.Action {
	case StepShutdownLeader:
		return decideShutdownLeader(in, step)
	case StepTransferLeadership:
		if upgraded(in, step.Pod) {
			// The leader's pod was re-created on the target (deleted by hand, a node
			// drain) and it leads again: it is done. Stepping it down would cost an
			// election for nothing.
			return decideReplace(in, step)
		}
		return decideStepDown(in, step)
	default:
		return decideReplace(in, step)
	}
}

// decideNext starts the next member, or completes the upgrade. The next member is
// the first of the plan not done yet, except the member that leads now while any
// other is left: the plan was made when the upgrade was planned, and leadership may
// have moved since (an election nobody planned, or a plan made while autopilot did
// not name the leader: found on the rig, a rollout planned while a follower was
// frozen stepped its leader down first, onto a member it had not restarted yet,
// and then had to hand leadership off a second time). Leader last is decided on
// what is observed at each step.
func decideNext(in Input) Decision {
	up, c := in.Upgrade, in.Cluster
	var pending []string
	for _, p := range up.Plan.Pods {
		if !slices.Contains(up.CompletedPods, p) {
			pending = append(pending, p)
		}
	}
	var next string
	for _, p := range pending {
		if p != c.Leader || len(pending) == 1 {
			next = p
			break
		}
	}
	if next == "" {
		for _, m := range c.Members {
			if !upgrade.SameVersion(m.Version, in.TargetVersion) || !m.PodReady {
				return Decision{Action: ActionWait, Pod: m.Name,
					WaitingFor: fmt.Sprintf("every member is replaced; waiting for %s to report %s and be Ready", m.Name, in.TargetVersion)}
			}
		}
		return Decision{Action: ActionComplete, WaitingFor: fmt.Sprintf("every member runs %s", in.TargetVersion)}
	}
	if upgraded(in, next) {
		// Already on the target on a Ready pod of the current template (re-created
		// outside the plan, for example after its pod was deleted by hand): it is
		// never stepped down or replaced; its gates and settle time still apply.
		return Decision{Action: ActionBeginStep, Pod: next, WaitingFor: fmt.Sprintf("%s already runs %s; checking its gates", next, in.TargetVersion)}
	}
	if in.Paused {
		return Decision{Action: ActionHold, Pod: next,
			WaitingFor: fmt.Sprintf("%s before %s; %s", pauseReason(in.PauseReason), next, remaining(up))}
	}
	if ok, why := budget(in, next); !ok {
		return Decision{Action: ActionWait, Pod: next, WaitingFor: fmt.Sprintf("waiting to replace %s: %s", next, why)}
	}
	return Decision{Action: ActionBeginStep, Pod: next, WaitingFor: fmt.Sprintf("starting %s", next)}
}

// StepActionFor is the first step action of a member, planned on what is observed
// at that moment: the leader first hands off leadership, unless it already runs the
// target image (then there is nothing to replace). With leaderHandoff Shutdown, a
// leader whose every other member runs the target is shut down instead: any voter
// that takes over runs the target. A leader with members still on the old version
// (an election nobody planned put it there) is stepped down in either mode, as
// before.
func StepActionFor(c *operation.Cluster, pod, targetImage, targetVersion string, handoff baov1.LeaderHandoff) baov1.StepAction {
	if handoff == "" {
		handoff = baov1.DefaultLeaderHandoff
	}
	if c.Leader == pod {
		if c.OnTarget(c.Member(pod), targetImage) {
			return StepReplaceMember
		}
		if handoff == baov1.LeaderHandoffShutdown && othersUpgraded(c, pod, targetImage, targetVersion) {
			return StepShutdownLeader
		}
		return StepTransferLeadership
	}
	return StepReplaceMember
}

// othersUpgraded reports whether every member but pod runs the target: a Ready pod
// on the target image that reports the target version, a healthy voter (by autopilot,
// or by its own read where autopilot lags: a member whose gates passed on that read,
// operation.Cluster.Follows, must not turn the leader's hand-off into a step-down,
// which can hand leadership to a member a rollout has not replaced yet). It says
// which hand-off fits; the leader's deletion still waits for the quorum budget, which
// is autopilot's.
func othersUpgraded(c *operation.Cluster, pod, targetImage, targetVersion string) bool {
	for i := range c.Members {
		m := &c.Members[i]
		if m.Name == pod {
			continue
		}
		if !c.OnTarget(m, targetImage) || !m.PodReady ||
			!upgrade.SameVersion(m.Version, targetVersion) || !m.Voter || !(m.Healthy || c.FollowsLeader(m)) {
			return false
		}
	}
	return true
}

// decideShutdownLeader replaces the leader by deleting its pod: OpenBao's graceful
// shutdown (SIGTERM) transfers leadership to the most up-to-date voter, and every
// other voter runs the target, so there is exactly one election and it lands on the
// target. If the transfer fails, the remaining voters elect a leader by timeout,
// again among members on the target. The deletion waits for the quorum budget and
// for every other member to be upgraded on this observation; afterwards the step
// waits for a leader on the target version before the member's own gates.
func decideShutdownLeader(in Input, step *baov1.UpgradeStep) Decision {
	c := in.Cluster
	m := c.Member(step.Pod)
	if m != nil && m.PodExists && !m.PodTerminating && !c.OnTarget(m, in.TargetImage) {
		if !c.AutopilotKnown {
			return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: "waiting for a trustworthy read of autopilot state before shutting the leader down"}
		}
		if !othersUpgraded(c, step.Pod, in.TargetImage, in.TargetVersion) {
			return Decision{Action: ActionWait, Pod: step.Pod,
				WaitingFor: fmt.Sprintf("waiting for every member but %s to be a healthy voter on %s before shutting %s down", step.Pod, in.TargetVersion, step.Pod)}
		}
		if ok, why := budget(in, step.Pod); !ok {
			return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("waiting to shut %s down: %s", step.Pod, why)}
		}
		if d, wait := templateNotSeen(c, step.Pod); wait {
			return d
		}
		what := "the leader"
		if c.Leader != step.Pod {
			what = "a former leader"
		}
		return Decision{Action: ActionDeletePod, Pod: step.Pod,
			WaitingFor: fmt.Sprintf("deleting %s, %s, so it restarts on %s: its graceful shutdown hands leadership to a member on %s", step.Pod, what, in.TargetImage, in.TargetVersion)}
	}
	if !c.AutopilotKnown || c.Leader == "" {
		return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s was shut down; waiting for a new leader", step.Pod)}
	}
	if l := c.Member(c.Leader); l == nil || !upgrade.SameVersion(l.Version, in.TargetVersion) {
		return Decision{Action: ActionWait, Pod: step.Pod,
			WaitingFor: fmt.Sprintf("%s was shut down; waiting for the new leader %s to report %s", step.Pod, c.Leader, in.TargetVersion)}
	}
	return decideReplace(in, step)
}

// templateNotSeen holds a pod's deletion while the StatefulSet controller has not
// seen the latest pod template (invariant 9): a pod deleted then comes back on the
// old revision and has to be deleted again.
func templateNotSeen(c *operation.Cluster, pod string) (Decision, bool) {
	if c.StatefulSet == nil || c.StatefulSetCurrent() {
		return Decision{}, false
	}
	return Decision{Action: ActionWait, Pod: pod, WaitingFor: fmt.Sprintf("waiting for the StatefulSet controller to see the new pod template before deleting %s (observedGeneration %d of %d)",
		pod, c.StatefulSet.Status.ObservedGeneration, c.StatefulSet.Generation)}, true
}

// upgraded reports whether a member already runs the target: a Ready pod, not being
// deleted, on the target image (the current template's), reporting the target version.
func upgraded(in Input, name string) bool {
	m := in.Cluster.Member(name)
	return in.Cluster.OnTarget(m, in.TargetImage) && m.PodReady && upgrade.SameVersion(m.Version, in.TargetVersion)
}

func decideStepDown(in Input, step *baov1.UpgradeStep) Decision {
	c := in.Cluster
	if !c.AutopilotKnown || c.Leader == "" {
		return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: "waiting for a trustworthy read of autopilot state to find the leader"}
	}
	if c.Leader != step.Pod {
		nl := c.Member(c.Leader)
		if nl == nil || !upgrade.SameVersion(nl.Version, in.TargetVersion) {
			// An election nobody planned (a member lost, a pod deleted by hand) put a
			// member that still runs the old version in charge. The step's member is a
			// follower now, so it can be replaced like any other; nothing would move
			// leadership again if the upgrade waited. The new leader's own step begins
			// with a hand-off (StepActionFor), so invariant 2 still holds for it. A
			// step-down Job still running is harmless: it only ever steps down the
			// member it names, confirmed on that member's own address.
			return Decision{Action: ActionStepDownVerified, Pod: step.Pod,
				WaitingFor: fmt.Sprintf("leadership moved from %s to %s by an election; %s leads on the old version and hands off at its own step", step.Pod, c.Leader, c.Leader)}
		}
		return Decision{Action: ActionStepDownVerified, Pod: step.Pod,
			WaitingFor: fmt.Sprintf("leadership moved from %s to %s, which runs %s", step.Pod, c.Leader, in.TargetVersion)}
	}
	job := in.StepDownJob
	switch job.Phase {
	case operation.JobNone:
		if operation.AttemptsExhausted(step) {
			return failStep(in, ReasonStepDownFailed, fmt.Sprintf("%s is still the leader after %d step-down attempts", step.Pod, step.Attempts))
		}
		// The leader's pod is deleted right after its step-down: its quorum budget
		// must hold now, not only when the step began.
		if ok, why := budget(in, step.Pod); !ok {
			return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("waiting to step %s down: %s", step.Pod, why)}
		}
		return Decision{Action: ActionStepDown, Pod: step.Pod, WaitingFor: fmt.Sprintf("asking %s to step down as leader", step.Pod)}
	case operation.JobRunning:
		return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("waiting for the step-down Job of %s", step.Pod)}
	case operation.JobSucceeded:
		if wait := job.FinishedAt.Add(LeaderChangeGrace).Sub(c.Now); wait > 0 {
			return Decision{Action: ActionWait, Pod: step.Pod, RequeueAfter: wait,
				WaitingFor: fmt.Sprintf("%s stepped down; waiting for autopilot to show the new leader", step.Pod)}
		}
		return retryStepDown(in, step, "leadership did not move")
	default:
		return retryStepDown(in, step, "the step-down Job failed: "+job.Message)
	}
}

func retryStepDown(in Input, step *baov1.UpgradeStep, why string) Decision {
	if operation.AttemptsExhausted(step) {
		return failStep(in, ReasonStepDownFailed, fmt.Sprintf("%s is still the leader after %d step-down attempts (%s)", step.Pod, step.Attempts, why))
	}
	if wait := in.StepDownJob.FinishedAt.Add(operation.StepDownCooldown).Sub(in.Cluster.Now); wait > 0 {
		return Decision{Action: ActionWait, Pod: step.Pod, RequeueAfter: wait,
			WaitingFor: fmt.Sprintf("%s; retrying the step-down of %s after OpenBao's 10 s cooldown", why, step.Pod)}
	}
	if ok, hz := budget(in, step.Pod); !ok {
		return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s; waiting to step %s down again: %s", why, step.Pod, hz)}
	}
	return Decision{Action: ActionStepDown, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s; asking %s to step down again", why, step.Pod)}
}

func decideReplace(in Input, step *baov1.UpgradeStep) Decision {
	c := in.Cluster
	m := c.Member(step.Pod)
	if m != nil && m.PodExists && !m.PodTerminating && !c.OnTarget(m, in.TargetImage) {
		if c.Leader == step.Pod {
			// Leadership came back to a member that still runs the old image: never
			// delete a leader; hand leadership off first.
			return Decision{Action: ActionBeginStep, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s became leader again; moving leadership off it first", step.Pod)}
		}
		// The budget was checked when the step began, but the deletion comes in a later
		// pass (after a step-down, or after a restart): another member may have failed
		// meanwhile. Check again, on this pass's observation, right before acting.
		if ok, why := budget(in, step.Pod); !ok {
			return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("waiting to delete %s: %s", step.Pod, why)}
		}
		if d, wait := templateNotSeen(c, step.Pod); wait {
			return d
		}
		return Decision{Action: ActionDeletePod, Pod: step.Pod, WaitingFor: fmt.Sprintf("deleting %s so it restarts on %s", step.Pod, in.TargetImage)}
	}
	gate := upgrade.FirstFailing(upgrade.MemberGates(c, step.Pod, in.TargetImage, in.TargetVersion, in.MaxLag))
	if gate != nil && gate.Name == "Voter" && m != nil && m.InRaft {
		return decidePromote(in, step, m, gate.WaitingFor)
	}
	if gate != nil {
		return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: gate.WaitingFor}
	}
	if step.GatesPassedAt == nil && in.SettleTime <= 0 {
		// Nothing to wait for: the member is done in this pass, without a pass that
		// only records when its gates passed.
		return Decision{Action: ActionCompleteMember, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s runs %s", step.Pod, in.TargetVersion)}
	}
	if step.GatesPassedAt == nil {
		return Decision{Action: ActionGatesPassed, Pod: step.Pod, RequeueAfter: in.SettleTime,
			WaitingFor: fmt.Sprintf("%s passed every gate; settling for %s", step.Pod, in.SettleTime)}
	}
	if wait := step.GatesPassedAt.Add(in.SettleTime).Sub(c.Now); wait > 0 {
		return Decision{Action: ActionWait, Pod: step.Pod, RequeueAfter: wait,
			WaitingFor: fmt.Sprintf("%s passed every gate; settling for %s more", step.Pod, wait.Round(time.Second))}
	}
	return Decision{Action: ActionCompleteMember, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s runs %s", step.Pod, in.TargetVersion)}
}

func failStep(in Input, reason baov1.FailureReason, msg string) Decision {
	return Decision{Action: ActionFail, Pod: in.Upgrade.CurrentStep.Pod, Reason: reason,
		Message:    fmt.Sprintf("%s; %s", msg, remaining(in.Upgrade)),
		WaitingFor: fmt.Sprintf("upgrade failed: %s", msg)}
}

// remaining names the members not started yet.
func remaining(up *baov1.UpgradeStatus) string {
	var rest []string
	for _, p := range up.Plan.Pods {
		if !slices.Contains(up.CompletedPods, p) && (up.CurrentStep == nil || up.CurrentStep.Pod != p) {
			rest = append(rest, p)
		}
	}
	done := "none"
	if len(up.CompletedPods) > 0 {
		done = strings.Join(up.CompletedPods, ", ")
	}
	if len(rest) == 0 {
		return fmt.Sprintf("upgraded: %s; no member left to start", done)
	}
	return fmt.Sprintf("upgraded: %s; not started: %s", done, strings.Join(rest, ", "))
}

func waitingSummary(step *baov1.UpgradeStep) string {
	if step.WaitingFor == "" {
		return "no progress was observed"
	}
	return "last " + step.WaitingFor
}

// RejoinSettle is how long a member whose pod turned Ready outside the operation (its
// pod deleted by hand, its volume lost) must have been Ready before it counts as a
// healthy voter in the quorum budget: autopilot's reconcile interval (10 s) and a
// margin. A member that lost its data rejoins under its old voter entry, which
// autopilot shows as a healthy voter until its next round demotes it; a budget
// judged in between let a leader's step-down go on while one of three members was
// about to stop voting (seen once on the rig: 4.8 s without writes).
const RejoinSettle = 12 * time.Second

// budget is QuorumBudget for member, holding also while another member restarted
// outside the operation has been Ready for less than RejoinSettle.
func budget(in Input, member string) (bool, string) {
	c := in.Cluster
	if ok, why := QuorumBudget(c, member); !ok {
		return false, why
	}
	up := in.Upgrade
	for _, m := range c.Members {
		if m.Name == member || m.ReadySince.IsZero() || !m.Voter {
			continue
		}
		if up != nil && (slices.Contains(up.CompletedPods, m.Name) || (up.CurrentStep != nil && up.CurrentStep.Pod == m.Name)) {
			continue
		}
		if since := c.Now.Sub(m.ReadySince); since < RejoinSettle {
			return false, fmt.Sprintf("%s restarted outside this operation and has been Ready for %s: waiting until %s, one autopilot round, so that Raft shows whether it still votes (a member that lost its data stops voting then)",
				m.Name, since.Round(time.Second), RejoinSettle)
		}
	}
	return true, ""
}

// QuorumBudget reports whether taking member down keeps quorum even if it comes back
// unhealthy: autopilot must be readable and healthy, every voter healthy, and the
// failure tolerance after losing the member must stay at least 0.
func QuorumBudget(c *operation.Cluster, member string) (bool, string) {
	if !c.AutopilotKnown {
		return false, "autopilot state is unknown or was read right after an election"
	}
	if !c.AutopilotHealthy {
		var unhealthy []string
		for _, m := range c.AllServers() {
			if m.InRaft && !m.Healthy {
				unhealthy = append(unhealthy, m.Name)
			}
		}
		if len(unhealthy) == 0 {
			return false, "autopilot reports the cluster unhealthy"
		}
		return false, "autopilot reports the cluster unhealthy; not healthy: " + c.Names(unhealthy)
	}
	voters, healthy := 0, 0
	var unhealthy, down, unheard []string
	memberHealthyVoter := false
	for _, m := range c.Members {
		if !m.Voter {
			continue
		}
		voters++
		switch {
		case !m.Healthy:
			unhealthy = append(unhealthy, m.Name)
		case m.Name != member && !m.Responsive():
			// Autopilot calls a voter unhealthy only once the leader has not heard
			// from it for its contact threshold (10 s). A member whose container
			// exited, or that stopped answering, right after its gates held is seen
			// here at once: its pod is no longer Ready, or it did not answer sys/health
			// as unsealed in this pass. This, with no settle time by default, is the
			// check that keeps the next pod from going while it is down.
			down = append(down, m.Name)
		case m.Name != member && !c.LeaderReaches(&m):
			// Ready and answering, but the leader's Raft has not reached its new
			// process yet: autopilot's healthy verdict proves nothing of that.
			unheard = append(unheard, m.Name)
		default:
			healthy++
			if m.Name == member {
				memberHealthyVoter = true
			}
		}
	}
	if len(unhealthy) > 0 {
		return false, fmt.Sprintf("voters not healthy: %s", c.Names(unhealthy))
	}
	if len(down) > 0 {
		return false, fmt.Sprintf("voters autopilot still calls healthy are not Ready or did not answer as unsealed: %s (the next member goes once they are Ready and answer again; if one stays down, see its pod's events and logs)", c.Names(down))
	}
	if len(unheard) > 0 {
		return false, fmt.Sprintf("the leader's Raft has not reached %s since it restarted (the next member goes once it has: deleting it now could leave the leader without a quorum)", c.Names(unheard))
	}
	if skewed := c.ClockSkewed(); len(skewed) > 0 {
		return false, "members' clocks are off: " + c.Names(skewed)
	}
	after := healthy
	if memberHealthyVoter {
		after--
	}
	if tol := after - (voters/2 + 1); tol < 0 {
		return false, fmt.Sprintf("taking it down would leave %d of %d voters healthy, below a majority of %d", after, voters, voters/2+1)
	}
	return true, ""
}

// PromoteAfter is how long a replaced member must have been a healthy, caught-up
// non-voter before baokeeper promotes it: three times autopilot's
// server_stabilization_time, after which autopilot would have promoted a member that
// joined normally.
const PromoteAfter = operation.NonVoterPromoteAfter

// JobGrace is how long after a successful promote Job the Raft view may take to show
// the new voter before the promotion is tried again.
const JobGrace = 15 * time.Second

// decidePromote handles a replaced member that is in Raft as a non-voter. With its
// data intact a restarted member comes back a voter; one that lost its volume joins
// again, as a permanent non-voter once the cluster formed, and waits for a promotion
// (invariant 10: it votes only once caught up).
func decidePromote(in Input, step *baov1.UpgradeStep, m *operation.Member, waiting string) Decision {
	c := in.Cluster
	lag := uint64(0)
	if c.LeaderIndex > m.LastIndex {
		lag = c.LeaderIndex - m.LastIndex
	}
	stable := m.Healthy && !m.StableSince.IsZero() && c.Now.Sub(m.StableSince) >= PromoteAfter
	if !stable || lag > in.MaxLag || !in.CanPromote {
		return Decision{Action: ActionWait, Pod: step.Pod, RequeueAfter: time.Second,
			WaitingFor: fmt.Sprintf("%s (it is a non-voter: waiting for it to be healthy and caught up for %s, then promoting it)", waiting, PromoteAfter)}
	}
	job := in.PromoteJob
	switch job.Phase {
	case operation.JobRunning:
		return Decision{Action: ActionWait, Pod: step.Pod, WaitingFor: fmt.Sprintf("waiting for the promote Job of %s", step.Pod)}
	case operation.JobSucceeded:
		if wait := job.FinishedAt.Add(JobGrace).Sub(c.Now); wait > 0 {
			return Decision{Action: ActionWait, Pod: step.Pod, RequeueAfter: wait,
				WaitingFor: fmt.Sprintf("%s was promoted; waiting for autopilot to show it a voter", step.Pod)}
		}
	case operation.JobFailed:
		if wait := job.FinishedAt.Add(operation.StepDownCooldown).Sub(c.Now); wait > 0 {
			return Decision{Action: ActionWait, Pod: step.Pod, RequeueAfter: wait,
				WaitingFor: fmt.Sprintf("the promote Job of %s failed (%s); retrying after 10 s", step.Pod, job.Message)}
		}
	}
	if operation.AttemptsExhausted(step) {
		return failStep(in, ReasonPromoteFailed, fmt.Sprintf("%s is still a non-voter after %d executor Job attempts (%s)", step.Pod, step.Attempts, orDash(job.Message)))
	}
	return Decision{Action: ActionPromote, Pod: step.Pod, WaitingFor: fmt.Sprintf("%s came back as a non-voter (it lost its data); promoting it", step.Pod)}
}

func orDash(s string) string {
	if s == "" {
		return "no error reported"
	}
	return s
}

// pauseReason is why a paused upgrade holds, in words.
func pauseReason(why string) string {
	if why == "" {
		return "paused by spec.upgrade.paused"
	}
	return why
}
