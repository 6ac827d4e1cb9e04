package bluegreen

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// Step actions stored in status.blueGreen.currentStep.action.
const (
	StepPromote    = upgrade.StepPromoteMember
	StepDemote     = upgrade.StepDemoteMember
	StepStepDown   = upgrade.StepTransferLeadership
	StepRemovePeer = upgrade.StepRemoveMember
	StepValidate   = baov1.StepValidate
)

// Failure reasons.
const (
	ReasonPhaseTimeout     = baov1.FailurePhaseTimeout
	ReasonGreenVotedEarly  = baov1.FailureGreenVotedEarly
	ReasonValidationFailed = baov1.FailureValidationFailed
	ReasonPromoteFailed    = baov1.FailurePromoteFailed
	ReasonDemoteFailed     = baov1.FailureDemoteFailed
	ReasonStepDownFailed   = baov1.FailureStepDownFailed
	ReasonRemovePeerFailed = baov1.FailureRemovePeerFailed
	ReasonWrongLeader      = baov1.FailureLeaderNotOnTarget
	ReasonUnknownPhase     = baov1.FailureUnknownPhase
)

// AcceptsPromote reports whether a baokeeper.dev/promote request releases the
// upgrade: only while it holds for one. A value set before the hold, or left from an
// earlier upgrade, was handled (refused) already and releases nothing.
func AcceptsPromote(st *baov1.BlueGreenStatus) bool {
	return st != nil && st.Phase == baov1.BlueGreenAwaitPromotion && st.Promotion == baov1.PromotionWaiting
}

// Retry prepares a failed blue-green upgrade for baokeeper.dev/retry: the phase's
// clock starts again, and its step gets more Job attempts: one more run of a
// validation hook (a hook that fails again holds again), DefaultMaxJobAttempts more
// of an executor Job.
func Retry(st *baov1.BlueGreenStatus, now time.Time) {
	t := metav1.NewTime(now)
	st.PhaseStartedAt = &t
	if s := st.CurrentStep; s != nil {
		s.StartedAt = &t
		if s.Action == StepValidate {
			s.MaxAttempts = s.Attempts + 1
		} else {
			operation.GrantAttempts(s)
		}
	}
}

// Phases returns the phases in order; progress counts in it.
func Phases() []baov1.BlueGreenPhase {
	return []baov1.BlueGreenPhase{
		baov1.BlueGreenDeployGreen, baov1.BlueGreenSync, baov1.BlueGreenValidate, baov1.BlueGreenAwaitPromotion,
		baov1.BlueGreenPromoteGreen, baov1.BlueGreenDemoteBlue, baov1.BlueGreenTransferLeadership,
		baov1.BlueGreenCutover, baov1.BlueGreenRemoveBlue, baov1.BlueGreenCleanup,
	}
}

// Settings are the spec's knobs of a blue-green upgrade.
type Settings struct {
	MinSync      time.Duration
	PhaseTimeout time.Duration
	MaxLag       uint64
	AutoPromote  bool
	Paused       bool
	// PauseReason says why it holds when Paused; "" says spec.upgrade.paused.
	PauseReason    string
	HasHook        bool
	MaxJobFailures int32
	// AutoRollbackOnExecutor and AutoRollbackOnValidation are
	// spec.upgrade.blueGreen.autoRollback: roll back instead of failing, before the
	// point of no return.
	AutoRollbackOnExecutor   bool
	AutoRollbackOnValidation bool
}

// Input is everything Decide needs. It holds no client and performs no I/O.
type Input struct {
	// Name and Namespace of the cluster, for the commands in messages.
	Name, Namespace string
	// Upgrade is the upgrade in progress (target, ID, failure).
	Upgrade *baov1.UpgradeStatus
	// Status is status.blueGreen; nil before the first pass of this upgrade.
	Status *baov1.BlueGreenStatus
	// Cluster is one observation: Members are blue's, Green green's.
	Cluster *operation.Cluster
	// Serving is the serving StatefulSet now; BlueRevision its current revision.
	Serving, BlueRevision string
	// GreenName is the name green's StatefulSet gets (recorded at the start).
	GreenName string
	// Replicas is spec.replicas: green's size.
	Replicas int32
	// BlueExists and BlueVolumes describe what is left of blue: its StatefulSet and
	// the volume claims not yet marked for deletion.
	BlueExists  bool
	BlueVolumes int
	// ClientSelectsGreen reports whether the client Service selects green's pods.
	ClientSelectsGreen bool
	// GreenExists and GreenVolumes describe what is left of green in a rollback's
	// cleanup: its StatefulSet and the volume claims not yet marked for deletion.
	GreenExists  bool
	GreenVolumes int
	// StepJob is the Job of the current step's current attempt, StepJobName its name.
	StepJob     operation.Job
	StepJobName string
	Settings
}

// Decision is the next status and the one action of this pass.
type Decision struct {
	operation.Action
	// Status is the next status.blueGreen.
	Status *baov1.BlueGreenStatus
	// Serving, when set, becomes status.statefulSet in the same status write.
	Serving string
	// Progress is where the upgrade stands, for status.upgrade.progress.
	Progress baov1.UpgradeProgress
}

// Decide is the blue-green phase machine; see the package documentation. The
// input is not changed.
func Decide(in Input) Decision {
	var next *baov1.BlueGreenStatus
	if in.Status != nil {
		next = in.Status.DeepCopy()
	}
	d := decide(in, next)
	if d.Status == nil {
		d.Status = next
	}
	if d.Status != nil {
		d.Progress = progressOf(d.Status)
	}
	return d
}

func decide(in Input, next *baov1.BlueGreenStatus) Decision {
	now := in.Cluster.Now
	if f := in.Upgrade.Failure; f != nil {
		return wait(fmt.Sprintf("upgrade failed (%s): fix the cause, then set the baokeeper.dev/retry annotation to a new value", f.Reason))
	}
	if next == nil {
		if in.Paused {
			if in.PauseReason != "" {
				return hold(in.PauseReason + ": the blue-green upgrade starts once that ends")
			}
			return hold("spec.upgrade.paused is true: the blue-green upgrade starts when it is set back to false")
		}
		return start(in)
	}
	var d Decision
	switch next.Phase {
	case baov1.BlueGreenDeployGreen:
		d = deployGreen(in, next)
	case baov1.BlueGreenSync:
		d = syncGreen(in, next)
	case baov1.BlueGreenValidate:
		d = validate(in, next)
	case baov1.BlueGreenAwaitPromotion:
		d = awaitPromotion(in, next)
	case baov1.BlueGreenPromoteGreen:
		d = promoteGreen(in, next)
	case baov1.BlueGreenDemoteBlue:
		d = demoteBlue(in, next)
	case baov1.BlueGreenTransferLeadership:
		d = transferLeadership(in, next)
	case baov1.BlueGreenCutover:
		d = cutover(in, next)
	case baov1.BlueGreenRemoveBlue:
		d = removeBlue(in, next)
	case baov1.BlueGreenCleanup:
		d = cleanup(in, next)
	case baov1.BlueGreenRollbackPromoteBlue, baov1.BlueGreenRollbackDemoteGreen, baov1.BlueGreenRollbackRemoveGreen, baov1.BlueGreenRollbackCleanup:
		d = rollback(in, next)
	default:
		return fail(next, ReasonUnknownPhase, fmt.Sprintf("status.blueGreen.phase is %q, which this release does not know (was the upgrade started by another baokeeper release?): "+
			"run the release that started it until it completes, or, if green never got a vote, delete green's StatefulSet %s and clear status.blueGreen and status.upgrade to start over",
			next.Phase, next.Green.StatefulSet))
	}
	// A phase that waits on the cluster is bounded; the hold for a person and the
	// validation hook (bounded by its own timeout) are not.
	if d.Kind == operation.KindWait && next.Phase != baov1.BlueGreenAwaitPromotion && next.Phase != baov1.BlueGreenValidate {
		since := next.PhaseStartedAt
		if st := next.CurrentStep; st != nil && st.StartedAt != nil {
			since = st.StartedAt
		}
		if since != nil && in.PhaseTimeout > 0 && now.Sub(since.Time) > in.PhaseTimeout {
			member := d.Member
			if st := next.CurrentStep; st != nil {
				member = st.Pod
			}
			msg := fmt.Sprintf("phase %s did not finish within %s (spec.upgrade.blueGreen.phaseTimeout): %s", next.Phase, in.PhaseTimeout, d.WaitingFor)
			if IsRollback(next.Phase) {
				return breakGlass(baov1.BreakGlassRollbackTimedOut, member, msg+"; the rollback ("+next.RollbackReason+") cannot go on by itself")
			}
			return failAt(next, ReasonPhaseTimeout, member, msg)
		}
	}
	return autoRollback(in, next, d)
}

// start records blue and green before anything is created. Blue's image and
// version come from what its members run, never from the spec.
func start(in Input) Decision {
	c := in.Cluster
	blueVersion := in.Upgrade.FromVersion
	for _, m := range c.Members {
		if m.Version != "" {
			blueVersion = strings.TrimPrefix(m.Version, "v")
			break
		}
	}
	t := metav1.NewTime(c.Now)
	st := &baov1.BlueGreenStatus{
		Phase: baov1.BlueGreenDeployGreen,
		Blue: baov1.MemberSet{StatefulSet: in.Serving, Revision: in.BlueRevision, Image: upgrade.RunningImage(c),
			Version: blueVersion, Replicas: int32(len(c.Members))},
		Green: baov1.MemberSet{StatefulSet: in.GreenName, Image: in.Upgrade.TargetImage, Version: in.Upgrade.TargetVersion,
			Replicas: in.Replicas},
		PhaseStartedAt: &t,
		Promotion:      baov1.PromotionPending,
	}
	return Decision{Action: operation.Action{Kind: operation.KindPersist,
		WaitingFor: fmt.Sprintf("creating green (StatefulSet %s, %d members on %s)", in.GreenName, in.Replicas, in.Upgrade.TargetImage),
		Event: fmt.Sprintf("Blue-green upgrade from %s to %s: blue is %s (%s), green will be %s", blueVersion, in.Upgrade.TargetVersion,
			in.Serving, st.Blue.Image, in.GreenName)}, Status: st}
}

func deployGreen(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if c.GreenStatefulSet == nil {
		return Decision{Action: operation.Action{Kind: operation.KindApply, Object: operation.ObjectGreenStatefulSet,
			WaitingFor: fmt.Sprintf("creating green's StatefulSet %s", next.Green.StatefulSet)}}
	}
	if d, ok := demoteEarlyVoter(in, next); ok {
		return d
	}
	if len(c.Green) < int(next.Green.Replicas) {
		return wait(fmt.Sprintf("waiting for green's %d members to be observed", next.Green.Replicas))
	}
	for _, m := range c.Green {
		if w := joinGate(c, m, next.Green); w != "" {
			return waitOn(m.Name, w)
		}
	}
	return enter(next, baov1.BlueGreenSync, c.Now, "green's members joined as non-voters; waiting for them to sync", "")
}

// demoteEarlyVoter handles a green member that votes before green was promoted.
// baokeeper never promotes one then; autopilot does when OpenBao lost the member from
// its permanent non-voter list (members that join at the same moment race on it:
// raft_autopilot_delegate.go writes the whole list on each join, and rereads it on
// every autopilot round). Such a member is demoted back by an executor Job, within
// the quorum budget, and the sync counts anew. A green member that leads cannot be
// demoted without an election: the upgrade fails, saying so.
func demoteEarlyVoter(in Input, next *baov1.BlueGreenStatus) (Decision, bool) {
	c := in.Cluster
	if st := next.CurrentStep; st != nil && st.Action == StepDemote {
		m := c.Member(st.Pod)
		done := c.AutopilotKnown && (m == nil || !m.InRaft || !m.Voter)
		return jobStep(in, next, operation.JobDemote, ReasonDemoteFailed, done,
			fmt.Sprintf("green member %s is a non-voter again", st.Pod), fmt.Sprintf("demoting green member %s, which autopilot promoted on its own", st.Pod)), true
	}
	for _, m := range c.Green {
		if !m.InRaft || !m.Voter {
			continue
		}
		if m.Name == c.Leader {
			return failAt(next, ReasonGreenVotedEarly, m.Name, fmt.Sprintf("green member %s leads before green was promoted (autopilot promoted it on its own and an election followed): "+
				"blue no longer leads; check the cluster, then set baokeeper.dev/retry", m.Name)), true
		}
		next.SyncedSince = nil
		if w := quorumGate(c, operation.Change{Remove: m.Name}); w != "" {
			return waitOn(m.Name, w), true
		}
		d := begin(in, next, StepDemote, m.Name, fmt.Sprintf("demoting green member %s, which autopilot promoted on its own", m.Name))
		d.Event = fmt.Sprintf("Autopilot promoted green member %s on its own (OpenBao lost it from its permanent non-voter list); demoting it back before green is synced", m.Name)
		return d, true
	}
	return Decision{}, false
}

// joinGate says what a green member still lacks to have joined: "" once it has.
func joinGate(c *operation.Cluster, m operation.Member, green baov1.MemberSet) string {
	switch {
	case !m.PodExists || m.PodTerminating:
		return fmt.Sprintf("waiting for green member %s to be created", m.Name)
	case m.Image != green.Image:
		return fmt.Sprintf("waiting for green member %s to run %s (it runs %s)", m.Name, green.Image, m.Image)
	case !m.PodReady || !m.Initialized || m.Sealed:
		return fmt.Sprintf("waiting for green member %s to join and unseal (pod Ready)", m.Name)
	case !upgrade.SameVersion(m.Version, green.Version):
		return fmt.Sprintf("waiting for green member %s to report version %s (it reports %s)", m.Name, green.Version, orNone(m.Version))
	case !c.AutopilotKnown:
		return "waiting for a trustworthy read of autopilot state"
	case !m.InRaft:
		return fmt.Sprintf("waiting for green member %s to appear in the Raft configuration", m.Name)
	}
	return ""
}

// synced says what a green member lacks to count as in sync: "" once it is.
func synced(c *operation.Cluster, m operation.Member, green baov1.MemberSet, maxLag uint64) string {
	if w := joinGate(c, m, green); w != "" {
		return w
	}
	if !m.Healthy {
		return fmt.Sprintf("waiting for autopilot to report green member %s healthy", m.Name)
	}
	if lag := lagOf(c, m); lag > maxLag {
		return fmt.Sprintf("waiting for green member %s to catch up (index %d behind the leader, limit %d)", m.Name, lag, maxLag)
	}
	return ""
}

func lagOf(c *operation.Cluster, m operation.Member) uint64 {
	if c.LeaderIndex > m.LastIndex {
		return c.LeaderIndex - m.LastIndex
	}
	return 0
}

func syncGreen(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if d, ok := demoteEarlyVoter(in, next); ok {
		return d
	}
	for _, m := range c.Green {
		if w := synced(c, m, next.Green, in.MaxLag); w != "" {
			if next.SyncedSince != nil {
				// A break: minSyncDuration counts again from the next time all are in sync.
				next.SyncedSince = nil
				return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: m.Name, WaitingFor: w + " (in sync again, minSyncDuration counts anew)"}}
			}
			return waitOn(m.Name, w)
		}
	}
	if !c.AutopilotHealthy {
		return wait("waiting for autopilot to report the cluster healthy")
	}
	if next.SyncedSince == nil {
		t := metav1.NewTime(c.Now)
		next.SyncedSince = &t
		return Decision{Action: operation.Action{Kind: operation.KindPersist,
			WaitingFor: fmt.Sprintf("green is in sync; it must stay so for %s (spec.upgrade.blueGreen.minSyncDuration)", in.MinSync)}}
	}
	if left := in.MinSync - c.Now.Sub(next.SyncedSince.Time); left > 0 {
		d := wait(fmt.Sprintf("green is in sync since %s; promotion may start in %s (minSyncDuration %s)",
			next.SyncedSince.UTC().Format(time.RFC3339), left.Round(time.Second), in.MinSync))
		d.RequeueAfter = left
		return d
	}
	if in.HasHook {
		return enter(next, baov1.BlueGreenValidate, c.Now, "green is in sync; running the validation hook", "Green is in sync; running the validation hook")
	}
	return enter(next, baov1.BlueGreenAwaitPromotion, c.Now, "green is in sync", "Green is in sync")
}

func validate(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	st := next.CurrentStep
	if st == nil || st.Action != StepValidate {
		t := metav1.NewTime(c.Now)
		next.CurrentStep = &baov1.UpgradeStep{Action: StepValidate, StartedAt: &t, Attempts: 1, MaxAttempts: 1}
		return Decision{Action: operation.Action{Kind: operation.KindPersist, WaitingFor: "starting the validation hook Job"}}
	}
	switch in.StepJob.Phase {
	case operation.JobNone:
		return Decision{Action: operation.Action{Kind: operation.KindCreateJob, Job: operation.JobValidate,
			WaitingFor: fmt.Sprintf("running the validation hook (attempt %d)", st.Attempts)}}
	case operation.JobRunning:
		return wait(fmt.Sprintf("waiting for the validation hook Job (attempt %d) to finish", st.Attempts))
	case operation.JobSucceeded:
		next.CurrentStep = nil
		return enter(next, baov1.BlueGreenAwaitPromotion, c.Now, "the validation hook passed", "The validation hook passed")
	}
	if !operation.AttemptsExhausted(st) {
		st.Attempts++
		t := metav1.NewTime(c.Now)
		st.StartedAt = &t
		return Decision{Action: operation.Action{Kind: operation.KindPersist, WaitingFor: fmt.Sprintf("running the validation hook again (attempt %d)", st.Attempts)}}
	}
	next.JobFailures++
	return fail(next, ReasonValidationFailed, fmt.Sprintf("the validation hook Job %s failed: %s. Read its logs with "+
		"kubectl logs -n %s job/%s; green has no vote and blue still leads. Fix the cause, then set baokeeper.dev/retry to a new value to run the hook again",
		in.StepJobName, orNone(in.StepJob.Message), in.Namespace, in.StepJobName))
}

func awaitPromotion(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	switch {
	case next.Promotion == baov1.PromotionRequested || next.Promotion == baov1.PromotionAutomatic:
		return enter(next, baov1.BlueGreenPromoteGreen, c.Now, "promoting green", "Promoting green")
	case in.AutoPromote:
		next.Promotion = baov1.PromotionAutomatic
		return Decision{Action: operation.Action{Kind: operation.KindPersist, WaitingFor: "promoting green (spec.upgrade.blueGreen.autoPromote)",
			Event: "Green is promoted automatically (spec.upgrade.blueGreen.autoPromote is true)"}}
	case next.Promotion != baov1.PromotionWaiting:
		next.Promotion = baov1.PromotionWaiting
		msg := PromoteHold(in.Name, in.Namespace, next)
		return Decision{Action: operation.Action{Kind: operation.KindPersist, WaitingFor: msg, Event: msg}}
	}
	return hold(PromoteHold(in.Name, in.Namespace, next))
}

// PromoteHold is the message of the hold for promotion: exactly which command
// releases it.
func PromoteHold(name, namespace string, st *baov1.BlueGreenStatus) string {
	return fmt.Sprintf("green (%s, %d members on %s) is in sync and waits for promotion: run "+
		"kubectl annotate openbaocluster %s -n %s baokeeper.dev/promote=$(date +%%s) --overwrite",
		st.Green.StatefulSet, st.Green.Replicas, st.Green.Version, name, namespace)
}

func promoteGreen(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if st := next.CurrentStep; st != nil && st.Action == StepPromote {
		m := c.Member(st.Pod)
		done := m != nil && m.InRaft && m.Voter
		return jobStep(in, next, operation.JobPromote, ReasonPromoteFailed, done,
			fmt.Sprintf("%s is a voter", st.Pod), fmt.Sprintf("promoting green member %s to voter", st.Pod))
	}
	for _, m := range c.Green {
		if m.InRaft && m.Voter {
			continue
		}
		if w := synced(c, m, next.Green, in.MaxLag); w != "" {
			return waitOn(m.Name, w)
		}
		healthy := 0
		if m.Healthy {
			healthy = 1
		}
		if w := quorumGate(c, operation.Change{AddVoters: 1, AddHealthy: healthy}); w != "" {
			return waitOn(m.Name, w)
		}
		return begin(in, next, StepPromote, m.Name, fmt.Sprintf("promoting green member %s to voter", m.Name))
	}
	return enter(next, baov1.BlueGreenDemoteBlue, c.Now, "every green member is a voter; demoting blue's followers", "Every green member is a voter")
}

func demoteBlue(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if !c.AutopilotKnown || c.Leader == "" {
		return wait("waiting for a trustworthy read of autopilot state with a known leader")
	}
	if st := next.CurrentStep; st != nil && st.Action == StepDemote {
		m := c.Member(st.Pod)
		if c.Leader == st.Pod {
			// An election made it the leader meanwhile: demoting a leader is not a
			// transfer. Drop the step; the leader is stepped down instead.
			next.CurrentStep = nil
			return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: st.Pod,
				WaitingFor: fmt.Sprintf("%s became the leader; it is stepped down instead of demoted", st.Pod)}}
		}
		done := m == nil || !m.InRaft || !m.Voter
		return jobStep(in, next, operation.JobDemote, ReasonDemoteFailed, done,
			fmt.Sprintf("%s is a non-voter", st.Pod), fmt.Sprintf("demoting blue member %s to non-voter", st.Pod))
	}
	for _, m := range c.Members {
		if !m.InRaft || !m.Voter || m.Name == c.Leader {
			continue
		}
		if w := quorumGate(c, operation.Change{Remove: m.Name}); w != "" {
			return waitOn(m.Name, w)
		}
		return begin(in, next, StepDemote, m.Name, fmt.Sprintf("demoting blue member %s to non-voter", m.Name))
	}
	return enter(next, baov1.BlueGreenTransferLeadership, c.Now,
		"blue's followers are non-voters; moving leadership to green", "Blue's followers are non-voters; stepping the blue leader down once")
}

func transferLeadership(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if !c.AutopilotKnown || c.Leader == "" {
		return wait("waiting for a trustworthy read of autopilot state with a known leader (an election may be in progress)")
	}
	if leader := memberIn(c.Green, c.Leader); leader != nil {
		if !upgrade.SameVersion(leader.Version, next.Green.Version) {
			return failAt(next, ReasonWrongLeader, leader.Name, fmt.Sprintf("green member %s leads but reports version %s, not %s", leader.Name, orNone(leader.Version), next.Green.Version))
		}
		next.CurrentStep = nil
		t := metav1.NewTime(c.Now)
		next.LeaderMovedAt = &t
		d := enter(next, baov1.BlueGreenCutover, c.Now,
			fmt.Sprintf("%s (green, %s) leads; switching the client Service to green", leader.Name, next.Green.Version),
			fmt.Sprintf("Leadership moved to %s (green, %s): the point of no return", leader.Name, next.Green.Version))
		d.Member, d.Serving = leader.Name, next.Green.StatefulSet
		return d
	}
	// The leader is blue (or unknown to us): only once every other blue member is
	// a non-voter can one step-down hand leadership to green only.
	for _, m := range c.Members {
		if m.InRaft && m.Voter && m.Name != c.Leader {
			next.CurrentStep = nil
			return enter(next, baov1.BlueGreenDemoteBlue, c.Now, fmt.Sprintf("%s is a blue voter again; demoting it first", m.Name), "")
		}
	}
	if st := next.CurrentStep; st != nil && st.Action == StepStepDown {
		if st.Pod != c.Leader {
			// The leader changed without green taking over (a blue member cannot win:
			// none votes). Step the new one down.
			next.CurrentStep = nil
			return Decision{Action: operation.Action{Kind: operation.KindPersist, WaitingFor: fmt.Sprintf("%s leads now; stepping it down", c.Leader)}}
		}
		d := jobStep(in, next, operation.JobStepDown, ReasonStepDownFailed, false, "",
			fmt.Sprintf("stepping down blue leader %s so that a green voter takes over", st.Pod))
		if d.Kind == operation.KindPersist && in.StepJob.Phase == operation.JobFailed {
			// A retry waits out OpenBao's step-down cooldown.
			if left := operation.StepDownCooldown - c.Now.Sub(in.StepJob.FinishedAt); left > 0 {
				w := wait(fmt.Sprintf("the step-down of %s failed (%s); trying again after the %s cooldown", st.Pod, orNone(in.StepJob.Message), operation.StepDownCooldown))
				w.RequeueAfter = left
				return w
			}
		}
		return d
	}
	if w := quorumGate(c, operation.Change{Remove: c.Leader}); w != "" {
		return waitOn(c.Leader, w)
	}
	return begin(in, next, StepStepDown, c.Leader, fmt.Sprintf("stepping down blue leader %s so that a green voter takes over", c.Leader))
}

func cutover(in Input, next *baov1.BlueGreenStatus) Decision {
	if !in.ClientSelectsGreen {
		return Decision{Action: operation.Action{Kind: operation.KindApply, Object: operation.ObjectClientService,
			WaitingFor: "switching the client Service to green"}, Serving: next.Green.StatefulSet}
	}
	return enter(next, baov1.BlueGreenRemoveBlue, in.Cluster.Now, "clients reach green; removing blue's peers from Raft", "The client Service selects green")
}

func removeBlue(in Input, next *baov1.BlueGreenStatus) Decision {
	c := in.Cluster
	if st := next.CurrentStep; st != nil && st.Action == StepRemovePeer {
		m := c.Member(st.Pod)
		done := c.AutopilotKnown && (m == nil || !m.InRaft)
		return jobStep(in, next, operation.JobRemovePeer, ReasonRemovePeerFailed, done,
			fmt.Sprintf("%s left Raft", st.Pod), fmt.Sprintf("removing blue member %s from Raft", st.Pod))
	}
	if !c.AutopilotKnown {
		return wait("waiting for a trustworthy read of autopilot state")
	}
	// Non-voters first, then the old leader (still a voter after its step-down).
	order := slices.Clone(c.Members)
	slices.SortStableFunc(order, func(a, b operation.Member) int {
		if a.Voter == b.Voter {
			return a.Ordinal - b.Ordinal
		}
		if a.Voter {
			return 1
		}
		return -1
	})
	for _, m := range order {
		if !m.InRaft {
			continue
		}
		if m.Name == c.Leader {
			return failAt(next, ReasonWrongLeader, m.Name, fmt.Sprintf("blue member %s leads again after the cutover; blue must never lead again: "+
				"leave it as it is and follow docs/runbooks/restore-from-snapshot.md if writes were lost", m.Name))
		}
		ch := operation.Change{}
		if m.Voter {
			ch.Remove = m.Name
		}
		if w := quorumGate(c, ch); w != "" {
			return waitOn(m.Name, w)
		}
		return begin(in, next, StepRemovePeer, m.Name, fmt.Sprintf("removing blue member %s from Raft", m.Name))
	}
	return enter(next, baov1.BlueGreenCleanup, c.Now, "blue's peers left Raft; deleting blue's StatefulSet", "Every blue peer left Raft")
}

func cleanup(in Input, next *baov1.BlueGreenStatus) Decision {
	if d, left := deleteSide("", "blue", next.Blue.StatefulSet, in.BlueExists, in.BlueVolumes, operation.ObjectBlueStatefulSet, operation.ObjectBlueVolumes); left {
		return d
	}
	return Decision{Action: operation.Action{Kind: operation.KindComplete,
		Event: fmt.Sprintf("Every member runs %s on %s (from %s); blue %s is gone", next.Green.Version, next.Green.StatefulSet, next.Blue.Version, next.Blue.StatefulSet)}}
}

// deleteSide deletes what is left of one side after its peers left Raft: its
// StatefulSet, then its volumes. The volumes are deleted while the pods terminate:
// the claims' protection finalizer keeps each until no pod uses it, and nothing else
// could use them (their names are the side's, and no StatefulSet of it is left to
// re-create a pod). left is false once nothing is.
func deleteSide(prefix, side, sts string, exists bool, vols int, stsObj, volObj operation.Object) (d Decision, left bool) {
	switch {
	case exists:
		return Decision{Action: operation.Action{Kind: operation.KindDelete, Object: stsObj,
			WaitingFor: fmt.Sprintf("%sdeleting %s's StatefulSet %s", prefix, side, sts)}}, true
	case vols > 0:
		return Decision{Action: operation.Action{Kind: operation.KindDelete, Object: volObj,
			WaitingFor: fmt.Sprintf("%sdeleting %s's %d volumes (data of removed peers, which must never rejoin)", prefix, side, vols)}}, true
	}
	return Decision{}, false
}

// jobStep resolves the current executor-Job step from what is observed: done
// (the outcome is visible in the Raft view) ends it; otherwise the Job of the
// current attempt is created, awaited, or, when it failed, followed by another
// attempt until the step's attempts are spent.
func jobStep(in Input, next *baov1.BlueGreenStatus, kind operation.JobKind, reason baov1.FailureReason, done bool, doneEvent, what string) Decision {
	st := next.CurrentStep
	if done {
		next.CurrentStep = nil
		return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: st.Pod, WaitingFor: doneEvent, Event: upgrade.Sentence(doneEvent)}}
	}
	switch in.StepJob.Phase {
	case operation.JobNone:
		return Decision{Action: operation.Action{Kind: operation.KindCreateJob, Job: kind, Member: st.Pod,
			WaitingFor: fmt.Sprintf("%s (attempt %d)", what, st.Attempts)}}
	case operation.JobRunning:
		return waitOn(st.Pod, fmt.Sprintf("%s: waiting for the executor Job (attempt %d)", what, st.Attempts))
	case operation.JobSucceeded:
		return waitOn(st.Pod, fmt.Sprintf("%s: the executor Job succeeded; waiting for the Raft view to show it", what))
	}
	next.JobFailures++
	if operation.AttemptsExhausted(st) {
		return failAt(next, reason, st.Pod, fmt.Sprintf("%s failed %d times (spec.upgrade.blueGreen.maxJobFailures): %s", what, st.Attempts, orNone(in.StepJob.Message)))
	}
	st.Attempts++
	return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: st.Pod,
		WaitingFor: fmt.Sprintf("%s: attempt %d failed (%s); trying again", what, st.Attempts-1, orNone(in.StepJob.Message))}}
}

// begin records the intent of an executor-Job step. spec.upgrade.paused holds
// here, between two steps.
func begin(in Input, next *baov1.BlueGreenStatus, action baov1.StepAction, member, what string) Decision {
	if in.Paused {
		if in.PauseReason != "" {
			return hold(fmt.Sprintf("%s: holding before %s", in.PauseReason, what))
		}
		return hold(fmt.Sprintf("spec.upgrade.paused is true: holding before %s", what))
	}
	t := metav1.NewTime(in.Cluster.Now)
	max := in.MaxJobFailures
	if max <= 0 {
		max = baov1.DefaultMaxJobFailures
	}
	next.CurrentStep = &baov1.UpgradeStep{Action: action, Pod: member, StartedAt: &t, Attempts: 1, MaxAttempts: max}
	return Decision{Action: operation.Action{Kind: operation.KindPersist, Member: member, WaitingFor: what}}
}

// quorumGate is invariant 1 for one step: a trustworthy autopilot read, a healthy
// cluster with every voter healthy, and a failure tolerance of 0 or more after the
// change. It says what is missing, or "".
func quorumGate(c *operation.Cluster, ch operation.Change) string {
	if !c.AutopilotKnown {
		return "waiting for a trustworthy read of autopilot state"
	}
	if !c.AutopilotHealthy {
		return "waiting for autopilot to report the cluster healthy"
	}
	p := operation.Project(c, ch)
	if len(p.Unhealthy) > 0 {
		return "waiting for every voter to be healthy (not healthy: " + p.UnhealthyWords + ")"
	}
	if ok, why := p.Allows(); !ok {
		return "holding the next step: " + why
	}
	return ""
}

func enter(next *baov1.BlueGreenStatus, phase baov1.BlueGreenPhase, now time.Time, waiting, event string) Decision {
	next.Phase = phase
	t := metav1.NewTime(now)
	next.PhaseStartedAt = &t
	return Decision{Action: operation.Action{Kind: operation.KindPersist, WaitingFor: waiting, Event: event}}
}

func wait(w string) Decision {
	return Decision{Action: operation.Action{Kind: operation.KindWait, WaitingFor: w}}
}

func waitOn(member, w string) Decision {
	return Decision{Action: operation.Action{Kind: operation.KindWait, Member: member, WaitingFor: w}}
}

func hold(msg string) Decision {
	return Decision{Action: operation.Action{Kind: operation.KindHold, WaitingFor: msg, Message: msg}}
}

func fail(next *baov1.BlueGreenStatus, reason baov1.FailureReason, msg string) Decision {
	return failAt(next, reason, "", msg)
}

func failAt(next *baov1.BlueGreenStatus, reason baov1.FailureReason, member, msg string) Decision {
	return Decision{Action: operation.Action{Kind: operation.KindFail, Reason: reason, Member: member, Message: msg, WaitingFor: msg}, Status: next}
}

func memberIn(ms []operation.Member, name string) *operation.Member {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

func progressOf(st *baov1.BlueGreenStatus) baov1.UpgradeProgress {
	all := Phases()
	if IsRollback(st.Phase) {
		all = RollbackPhases()
	}
	i := slices.Index(all, st.Phase)
	return baov1.UpgradeProgress{Stage: string(st.Phase), Completed: int32(max(i, 0)), Total: int32(len(all))}
}

func orNone(s string) string {
	if s == "" {
		return "no message"
	}
	return s
}
