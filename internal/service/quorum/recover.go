package quorum

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// SoleVoterTimeout bounds the wait for the survivor to lead alone after its restart:
// a pod start, an unseal and OpenBao's recovery from peers.json (it applies the file
// before it opens its Raft log, then elects itself at once) take well under a
// minute on the rig; five leave room for a slow image pull and a slow disk.
const SoleVoterTimeout = 5 * time.Minute

// InPlaceRestartTimeout bounds the same wait when a person restarts the survivor in
// place (see RecoverOperation): time to read the event and run one command.
const InPlaceRestartTimeout = 15 * time.Minute

// Event reasons of a recovery from a lost majority.
const (
	// EventQuorumRecoveryRequested: baokeeper.dev/recover-quorum was accepted.
	EventQuorumRecoveryRequested baov1.Reason = "QuorumRecoveryRequested"
	// EventQuorumRecovered: the survivor leads alone and the others join afresh.
	EventQuorumRecovered baov1.Reason = "QuorumRecovered"
	// EventQuorumRecoveryFailed: the recovery stopped; status says why.
	EventQuorumRecoveryFailed baov1.Reason = "QuorumRecoveryFailed"
	// EventQuorumRecoveryNeedsRestart: the StatefulSet would not re-create the
	// survivor's pod; a person restarts its container in place.
	EventQuorumRecoveryNeedsRestart baov1.Reason = "QuorumRecoveryNeedsRestart"
)

// ParseRecoverRequest splits a baokeeper.dev/recover-quorum value, MEMBER:NONCE.
func ParseRecoverRequest(v string) (member, nonce string, ok bool) {
	member, nonce, ok = strings.Cut(v, ":")
	return member, nonce, ok && member != "" && nonce != "" && !strings.Contains(nonce, ":")
}

// RecoveryRunning reports whether a recovery from a lost majority is in progress.
func RecoveryRunning(st *baov1.OpenBaoClusterStatus) bool {
	r := st.QuorumRecovery
	return r != nil && r.Step != baov1.QuorumRecoveryDone && r.Step != baov1.QuorumRecoveryFailed
}

// JudgeRecovery decides a new baokeeper.dev/recover-quorum value: accepted only
// while break-glass MajorityLost is active, with its current nonce, for its survivor
// (the voter with the highest committed index), no upgrade in progress and no
// recovery running; and, where the pass observed the members (obs not nil), while
// the survivor answers, no voter that was silent when break-glass began answers
// again (it may bring a majority back, and a recovery beside it would split the
// cluster in two), and the voters that answer are fewer than a majority. Another
// survivor that answered all along (three of five lost: two answer) is no reason to
// refuse: its copy holds no more than the survivor's, and the recovery replaces it
// once the survivor leads alone. why says, when it refuses, what to change. Pure.
func JudgeRecovery(c *baov1.OpenBaoCluster, obs *operation.Cluster, value string) (ok bool, why string) {
	st := &c.Status
	member, nonce, parsed := ParseRecoverRequest(value)
	bg := st.BreakGlass
	switch {
	case !parsed:
		return false, "the value must be MEMBER:NONCE, the survivor and the nonce that status.breakGlass names (kubectl bao recover-quorum fills both in)"
	case RecoveryRunning(st):
		return false, fmt.Sprintf("a recovery from %s runs already (step %s): wait for it (status.quorumRecovery)", st.QuorumRecovery.Survivor, st.QuorumRecovery.Step)
	case st.Upgrade != nil:
		return false, fmt.Sprintf("an upgrade to %s is in progress, and it watches its own quorum: follow status.breakGlass.recoverySteps instead", st.Upgrade.TargetVersion)
	case bg == nil || !bg.Active || bg.Reason != baov1.BreakGlassMajorityLost:
		return false, fmt.Sprintf("no majority of voters is known lost (break-glass %s): recover-quorum is only for break-glass %s, when a majority's data is gone or silent past %s",
			breakGlassState(bg), baov1.BreakGlassMajorityLost, MajorityLostAfter)
	case nonce != bg.Nonce:
		return false, fmt.Sprintf("%q is not the current nonce (status.breakGlass.nonce): a stale or mistyped value recovers nothing", nonce)
	case bg.Survivor == "":
		return false, "no voter of the last configuration survives: restore the latest snapshot instead (docs/restore.md)"
	case member != bg.Survivor:
		return false, fmt.Sprintf("%s is not the most up-to-date survivor: %s holds committed index %d (%s: %d), and a recovery from %s would lose what only %s holds",
			member, bg.Survivor, committed(bg, bg.Survivor), member, committed(bg, member), member, bg.Survivor)
	}
	if obs == nil {
		return true, ""
	}
	if m := obs.Member(member); m == nil || !m.PodExists || m.PodTerminating || !m.Responsive() {
		return false, fmt.Sprintf("the survivor %s does not answer now (its pod stopped or restarted): nothing was written; wait until it runs again and ask again", member)
	}
	if st.Quorum != nil {
		answering := 0
		for _, lv := range st.Quorum.LastVoters {
			m := obs.Member(lv.Name)
			if m == nil || !m.Responsive() {
				continue
			}
			answering++
			if lv.Name != member && committed(bg, lv.Name) == 0 {
				// Silent when break-glass began, answering now: the loss may heal.
				return false, fmt.Sprintf("%s answers again, so a majority may come back by itself: acknowledge break-glass instead (kubectl bao break-glass ack), "+
					"since a recovery beside a voter that still runs splits the cluster in two", lv.Name)
			}
		}
		if majority := len(st.Quorum.LastVoters)/2 + 1; answering >= majority {
			return false, fmt.Sprintf("%d of the %d last voters answer, a majority: the cluster can elect a leader by itself; acknowledge break-glass instead (kubectl bao break-glass ack)",
				answering, len(st.Quorum.LastVoters))
		}
	}
	return true, ""
}

func breakGlassState(bg *baov1.BreakGlassStatus) string {
	switch {
	case bg == nil || !bg.Active:
		return "is not active"
	default:
		return "reason " + string(bg.Reason)
	}
}

func committed(bg *baov1.BreakGlassStatus, name string) int64 {
	for _, m := range bg.Members {
		if m.Name == name {
			return m.CommittedIndex
		}
	}
	return 0
}

// AcceptRecovery is the recovery an accepted value starts: from the survivor whose
// pod and node are recorded now (the steps act on exactly that pod, and the first
// pass records its data volume claim), at its first step.
func AcceptRecovery(c *baov1.OpenBaoCluster, obs *operation.Cluster, value string) *baov1.QuorumRecoveryStatus {
	member, _, _ := ParseRecoverRequest(value)
	t := metav1.NewTime(obs.Now)
	r := &baov1.QuorumRecoveryStatus{Request: value, Survivor: member, Step: baov1.QuorumRecoveryWritePeers,
		ID: operation.ID(c, "QuorumRecovery", obs.Now), StartedAt: &t, StepStartedAt: &t}
	if m := obs.Member(member); m != nil {
		r.SurvivorPod, r.Node = m.UID, m.Node
	}
	if q := c.Status.Quorum; q != nil {
		// The claims that held the other voters' data when they were last voters: a
		// claim with that UID must never serve a member again (ReplaceOthers).
		for _, lv := range q.LastVoters {
			if lv.Name != member {
				r.Others = append(r.Others, baov1.RecoveredMember{Name: lv.Name, VolumeClaim: lv.VolumeClaimUID})
			}
		}
	}
	r.WaitingFor = fmt.Sprintf("writing peers.json on %s, naming it the only voter", member)
	return r
}

// RecoverOperation is a recovery from a lost majority as the one operation of a
// pass, chosen while one runs: OpenBao's peers.json recovery on the survivor, its
// restart as a one-voter cluster, then the other members' data and pods replaced so
// that they join it afresh (scaling then makes them voters). Each step is recorded
// before it is taken and acts only on the objects (pod and claim UIDs) recorded;
// a pass after a crash finds the step and goes on.
type RecoverOperation struct{}

// Name implements operation.Operation.
func (RecoverOperation) Name() string { return "QuorumRecovery" }

// Decide implements operation.Operation.
func (RecoverOperation) Decide(s *operation.Snapshot) operation.Plan {
	st := s.Status()
	r := st.QuorumRecovery
	now := metav1.NewTime(s.Now)
	persist := func() operation.Plan {
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist}}
	}
	next := func(step baov1.QuorumRecoveryStep, waitingFor string) operation.Plan {
		r.Step, r.StepStartedAt, r.Attempts, r.WaitingFor = step, &now, 0, waitingFor
		return persist()
	}
	fail := func(msg string) operation.Plan {
		r.Step, r.Failure, r.WaitingFor, r.CompletedAt = baov1.QuorumRecoveryFailed, msg, "", &now
		history.Add(st, history.QuorumRecovery(r, baov1.OutcomeFailed, string(EventQuorumRecoveryFailed), msg, s.Now), 0)
		return persist().Say(operation.Warning(EventQuorumRecoveryFailed, msg))
	}
	wait := func(msg string) operation.Plan {
		r.WaitingFor = msg
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, WaitingFor: msg}, Poll: 2 * time.Second}
	}
	survivor := s.Member(r.Survivor)
	switch r.Step {
	case baov1.QuorumRecoveryWritePeers:
		switch {
		case survivor == nil || !survivor.PodExists || survivor.UID != r.SurvivorPod:
			return fail(fmt.Sprintf("the pod of the survivor %s is no longer the one the recovery was asked for (UID %s): nothing was written; "+
				"break-glass follows again with a fresh nonce: check status.breakGlass and ask again", r.Survivor, r.SurvivorPod))
		case s.VolumeUIDs[claimOf(r.Survivor)] == "":
			return fail(fmt.Sprintf("the survivor %s has no data volume claim %s: nothing was written; "+
				"break-glass follows again with a fresh nonce: check status.breakGlass and ask again", r.Survivor, claimOf(r.Survivor)))
		case r.SurvivorVolumeClaim == "":
			// The first pass of the recovery records the claim the Job mounts (its pod,
			// recorded on acceptance, holds it: a claim in use is not deleted).
			r.SurvivorVolumeClaim, r.Attempts = s.VolumeUIDs[claimOf(r.Survivor)], 1
			return persist()
		case s.VolumeUIDs[claimOf(r.Survivor)] != r.SurvivorVolumeClaim:
			return fail(fmt.Sprintf("the data volume claim of the survivor %s is no longer the one the recovery recorded (UID %s): nothing was written; "+
				"break-glass follows again with a fresh nonce: check status.breakGlass and ask again", r.Survivor, r.SurvivorVolumeClaim))
		case r.Attempts == 0:
			r.Attempts = 1
			return persist()
		}
		name := executorjob.JobName(s.Object, executorjob.StepWritePeers, r.ID, r.Survivor, r.Attempts)
		j := s.JobOf(name, r.ID)
		switch j.Phase {
		case operation.JobSucceeded:
			return next(baov1.QuorumRecoveryRestartSurvivor, fmt.Sprintf("restarting %s so that OpenBao reads peers.json", r.Survivor))
		case operation.JobFailed:
			if r.Attempts < operation.DefaultMaxJobAttempts {
				r.Attempts++
				return persist()
			}
			return fail(fmt.Sprintf("the Job writing peers.json on %s failed %d times (%s): nothing else was changed; read its log (kubectl logs -n %s job/%s), "+
				"then ask again after break-glass follows", r.Survivor, r.Attempts, j.Message, s.Object.Namespace, name))
		case operation.JobRunning:
			return wait(fmt.Sprintf("Job %s writes peers.json on %s", name, r.Survivor))
		}
		host := workload.NamesFor(s.Object).MemberHost(int32(survivor.Ordinal), s.Object.Namespace)
		job := executorjob.WritePeersJob(s.Object, r.ID, r.Survivor, r.Attempts, s.RestoreImage(), r.Node, fmt.Sprintf("%s:%d", host, workload.ClusterPort))
		msg := fmt.Sprintf("Job %s writes peers.json on %s", name, r.Survivor)
		r.WaitingFor = msg
		return operation.Plan{Status: st, Job: job, Action: operation.Action{Kind: operation.KindCreateJob, Job: operation.JobWritePeers, Member: r.Survivor, WaitingFor: msg}}
	case baov1.QuorumRecoveryRestartSurvivor:
		if blocked := blockedBy(s, survivor); survivor != nil && survivor.UID == r.SurvivorPod && len(blocked) > 0 {
			// OrderedReady: a deleted survivor would come back only once every lower
			// ordinal is Ready, and those cannot be without a leader. The operator has
			// no exec right; a person restarts the container in place (same pod, same
			// volume), and the next step sees the survivor lead.
			msg := inPlaceInstruction(s, r.Survivor, blocked)
			return next(baov1.QuorumRecoveryWaitSoleVoter, msg).Say(operation.Warning(EventQuorumRecoveryNeedsRestart, msg))
		}
		if survivor != nil && survivor.PodExists && survivor.UID == r.SurvivorPod {
			msg := fmt.Sprintf("restarting %s so that OpenBao reads peers.json", r.Survivor)
			r.WaitingFor = msg
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectMemberData,
				Members: []string{r.Survivor}, Preconditions: map[string]string{r.Survivor: r.SurvivorPod}, WaitingFor: msg}}
		}
		return next(baov1.QuorumRecoveryWaitSoleVoter, fmt.Sprintf("%s restarts and recovers from peers.json as the only voter", r.Survivor))
	case baov1.QuorumRecoveryWaitSoleVoter:
		if s.AutopilotKnown && s.Leader == r.Survivor {
			r.Others = withPods(s, r.Others)
			return next(baov1.QuorumRecoveryReplaceOthers, fmt.Sprintf("%s leads alone; replacing what is left of the old data of %s so that they join it afresh",
				r.Survivor, orNobody(names(r.Others))))
		}
		inPlace := survivor != nil && survivor.UID == r.SurvivorPod
		bound := SoleVoterTimeout
		if inPlace {
			bound = InPlaceRestartTimeout
		}
		if r.StepStartedAt != nil && s.Now.Sub(r.StepStartedAt.Time) > bound {
			return fail(fmt.Sprintf("%s did not lead within %s of its restart: read its log (kubectl logs -n %s %s) for the recovery from peers.json; "+
				"peers.json stays in its Raft directory until OpenBao reads it. Break-glass follows again with a fresh nonce", r.Survivor, bound, s.Object.Namespace, r.Survivor))
		}
		if inPlace {
			return wait(inPlaceInstruction(s, r.Survivor, blockedBy(s, survivor)))
		}
		return wait(fmt.Sprintf("%s restarts and recovers from peers.json as the only voter (leader now: %s)", r.Survivor, orNone(s.Leader)))
	case baov1.QuorumRecoveryReplaceOthers:
		pre := map[string]string{}
		var members []string
		for _, o := range r.Others {
			claim := claimOf(o.Name)
			if o.VolumeClaim != "" && s.VolumeUIDs[claim] == o.VolumeClaim {
				pre[claim] = o.VolumeClaim
			}
			if m := s.Member(o.Name); o.Pod != "" && m != nil && m.PodExists && !m.PodTerminating && m.UID == o.Pod {
				pre[o.Name] = o.Pod
			}
			if pre[claim] != "" || pre[o.Name] != "" {
				members = append(members, o.Name)
			}
		}
		if len(members) > 0 {
			msg := fmt.Sprintf("deleting the data volume claims and pods of %s so that they join %s afresh", strings.Join(members, ", "), r.Survivor)
			r.WaitingFor = msg
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectMemberData,
				Members: members, Preconditions: pre, WaitingFor: msg}}
		}
		msg := fmt.Sprintf("Recovered from %s: it leads alone, and %s join it with fresh data; scaling makes them voters", r.Survivor, orNobody(names(r.Others)))
		r.Step, r.WaitingFor, r.CompletedAt = baov1.QuorumRecoveryDone, "", &now
		history.Add(st, history.QuorumRecovery(r, baov1.OutcomeSucceeded, "", msg, s.Now), 0)
		return persist().Say(operation.Normal(EventQuorumRecovered, msg))
	}
	return operation.Nothing()
}

// blockedBy lists the members of a lower ordinal than the survivor whose pods are
// missing or not Ready: with OrderedReady, the StatefulSet re-creates a deleted pod
// only once all of those are Ready.
func blockedBy(s *operation.Snapshot, survivor *operation.Member) []string {
	if survivor == nil {
		return nil
	}
	var out []string
	for i := range survivor.Ordinal {
		name := workload.NamesFor(s.Object).Member(int32(i))
		if m := s.Member(name); m == nil || !m.PodExists || m.PodTerminating || !m.PodReady {
			out = append(out, name)
		}
	}
	return out
}

// inPlaceInstruction says why and how a person restarts the survivor in place.
func inPlaceInstruction(s *operation.Snapshot, survivor string, blocked []string) string {
	return fmt.Sprintf("restart %s's OpenBao in place so that it reads peers.json: kubectl exec -n %s %s -c %s -- kill 1 "+
		"(its pod is not deleted: the StatefulSet would re-create it only once %s are Ready, which they cannot be without a leader; "+
		"baokeeper has no exec right). The recovery goes on once %s leads alone",
		survivor, s.Object.Namespace, survivor, workload.ContainerName, strings.Join(blocked, ", "), survivor)
}

// withPods records, for each other member whose volume claim is still the one that
// held its data as a voter (a node that was down, its volume intact), the pod that
// runs on it now: ReplaceOthers deletes exactly that claim and pod. A member whose
// claim is gone or new already starts empty; nothing of it is deleted.
func withPods(s *operation.Snapshot, others []baov1.RecoveredMember) []baov1.RecoveredMember {
	out := make([]baov1.RecoveredMember, len(others))
	for i, o := range others {
		out[i] = baov1.RecoveredMember{Name: o.Name}
		if o.VolumeClaim == "" || s.VolumeUIDs[claimOf(o.Name)] != o.VolumeClaim {
			continue
		}
		out[i].VolumeClaim = o.VolumeClaim
		if m := s.Member(o.Name); m != nil && m.PodExists {
			out[i].Pod = m.UID
		}
	}
	return out
}

func names(ms []baov1.RecoveredMember) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return strings.Join(out, ", ")
}

func orNobody(s string) string {
	if s == "" {
		return "no other member"
	}
	return s
}
