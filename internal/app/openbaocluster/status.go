package openbaocluster

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// computeStatus derives the whole status from the observation and what the pass did.
// It mutates memory only; statusapply writes it. observedGeneration advances only when
// the pass succeeded.
func computeStatus(c *baov1.OpenBaoCluster, obs *observation, p *pass, succeeded bool) {
	st := &c.Status
	replicas := c.GetReplicas()
	n := workload.NamesFor(c)

	st.Members = st.Members[:0]
	var ready int32
	var notReady, desired []string
	rv := newRaftView(obs)
	for i := range max(replicas, obs.stsReplicas()) {
		name := n.Member(i)
		m := baov1.MemberStatus{Name: name}
		if pod := obs.pods[name]; pod != nil {
			m.Image = workload.ContainerImage(&pod.Spec)
			m.Ready = podReady(pod)
		}
		if h := obs.health[name]; h != nil {
			m.Version = normalizeVersion(h.Version)
			if sc := h.Certificate; sc != nil {
				m.ServedCertificateSHA256, m.ServedCertificateNotAfter = sc.SHA256, ptr(metav1.NewTime(sc.NotAfter))
			}
		}
		m.RaftRole, m.Healthy = rv.role(name)
		if i < replicas {
			desired = append(desired, name)
			if m.Ready {
				ready++
			} else {
				notReady = append(notReady, name)
			}
		}
		st.Members = append(st.Members, m)
	}
	st.ReadyMembers = ready
	if len(st.Members) == 0 {
		st.Members = nil
	}
	st.Voters, st.Leader, st.Raft = rv.voters(replicas), rv.leader, rv.counts()

	initialized := wasInitialized(c) || ready > 0
	allReady := ready == replicas && obs.stsCurrent()

	gen := c.Generation
	set := func(t baov1.ConditionType, ok bool, reason baov1.Reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: string(t), Status: status, Reason: string(reason), Message: msg,
			ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(obs.now),
		})
	}

	quorum := replicas/2 + 1
	raftProblem := ""
	switch reason, msg := rv.availability(ready, replicas); {
	case ready < quorum:
		set(baov1.ConditionAvailable, false, baov1.ReasonQuorumNotReady, fmt.Sprintf("%d of %d members are Ready; a majority needs %d", ready, replicas, quorum))
	case reason == baov1.ReasonNoLeader || reason == baov1.ReasonQuorumLost:
		raftProblem = msg
		set(baov1.ConditionAvailable, false, reason, msg)
	default:
		set(baov1.ConditionAvailable, true, reason, msg)
	}
	// A cluster that serves with a member that does not vote has lost the failure
	// tolerance its size promises: one more failure and it stops.
	shortfall := ""
	if raftProblem == "" && ready == replicas {
		shortfall = rv.toleranceShortfall(desired)
	}

	if initialized {
		set(baov1.ConditionInitialized, true, baov1.ReasonSelfInitialized, "The cluster initialized itself; self-initialization is now disabled")
	} else {
		set(baov1.ConditionInitialized, false, baov1.ReasonWaitingForInitialization, fmt.Sprintf("Waiting for %s to initialize the cluster and become Ready", n.Member(0)))
	}

	if p.refusal != "" {
		set(baov1.ConditionSpecValid, false, refusalReason(p), p.refusal)
	} else if p.decision != nil {
		set(baov1.ConditionSpecValid, true, baov1.ReasonSpecAccepted, "spec.version and spec.image passed the version and image policy")
	}

	if p.tlsReason != "" {
		set(baov1.ConditionTLSReady, p.tlsReason != baov1.ReasonUserCertificateMissing && p.tlsReason != baov1.ReasonUserCertificateInvalid, p.tlsReason, p.tlsMessage)
	}
	switch {
	case !p.notAfter.IsZero():
		st.TLS = &baov1.TLSStatus{NotAfter: ptr(metav1.NewTime(p.notAfter)), CertificateSHA256: p.certSHA256}
		if !p.renewAt.IsZero() && c.Spec.TLS.SecretName == "" {
			st.TLS.RenewAt = ptr(metav1.NewTime(p.renewAt))
		}
	case c.Spec.TLS.SecretName != "":
		st.TLS = nil
	}

	pending := versionChangePending(c)
	upReason, upMsg := upgradeState(c)
	if upReason == "" {
		upReason, upMsg = scalingState(c)
	}
	switch {
	case p.refusal != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonSpecRefused, p.refusal)
	case p.blocked != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonSealKeyMissing, p.blocked)
	case upReason == baov1.ReasonUpgradeFailed || upReason == baov1.ReasonScalingFailed:
		set(baov1.ConditionDegraded, true, upReason, upMsg)
	case upReason == baov1.ReasonScaling:
		set(baov1.ConditionDegraded, false, upReason, "A membership change is in progress: "+upMsg)
	case upReason != "":
		set(baov1.ConditionDegraded, false, upReason, "A version change is in progress: "+upMsg)
	case wasRunning(c) && ready < replicas:
		set(baov1.ConditionDegraded, true, baov1.ReasonMembersNotReady, fmt.Sprintf("Members not Ready: %s", strings.Join(notReady, ", ")))
	case raftProblem != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonRaftUnavailable, raftProblem)
	case shortfall != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonFailureToleranceLow, shortfall)
	default:
		set(baov1.ConditionDegraded, false, baov1.ReasonAllMembersReady, fmt.Sprintf("%d of %d members are Ready", ready, replicas))
	}

	switch {
	case obs.sts == nil && !p.createdSTS:
		st.Phase = baov1.PhasePending
		set(baov1.ConditionProgressing, true, baov1.ReasonCreating, "Creating the workload objects")
	case !initialized || (!wasRunning(c) && !allReady):
		st.Phase = baov1.PhaseInitializing
		set(baov1.ConditionProgressing, true, baov1.ReasonInitializing, initializingMessage(c, notReady, ready, replicas))
	case !wasRunning(c) && shortfall != "" && (upReason == "" || upReason == baov1.ReasonScaling):
		// A new cluster is Running once every member votes, not before: until then
		// losing the first member's volume would lose the cluster.
		st.Phase = baov1.PhaseInitializing
		set(baov1.ConditionProgressing, true, baov1.ReasonWaitingForVoters, "Waiting for every member to vote. "+shortfall)
	case upReason == baov1.ReasonScaling || upReason == baov1.ReasonScalingFailed:
		st.Phase = baov1.PhaseScaling
		set(baov1.ConditionProgressing, upReason == baov1.ReasonScaling, upReason, upMsg)
	case upReason != "":
		st.Phase = baov1.PhaseUpgrading
		set(baov1.ConditionProgressing, upReason != baov1.ReasonUpgradeFailed, upReason, upMsg)
	case !allReady || raftProblem != "" || shortfall != "":
		st.Phase = baov1.PhaseDegraded
		set(baov1.ConditionProgressing, false, baov1.ReasonReconciled, "The workload objects match the spec")
	case pending != "":
		st.Phase = baov1.PhaseRunning
		set(baov1.ConditionProgressing, true, baov1.ReasonUpgradePending, pending)
	default:
		st.Phase = baov1.PhaseRunning
		set(baov1.ConditionProgressing, false, baov1.ReasonReconciled, "The workload objects match the spec")
	}
	if p.refusal != "" && obs.sts == nil {
		st.Phase = baov1.PhaseFailed
	}

	st.Message = statusMessage(c, p, ready, replicas, notReady, pending)
	if raftProblem != "" && p.refusal == "" && p.blocked == "" && st.Phase == baov1.PhaseDegraded && ready == replicas {
		st.Message = raftProblem
	}
	if shortfall != "" && p.refusal == "" && p.blocked == "" && ready == replicas &&
		(st.Phase == baov1.PhaseDegraded || st.Phase == baov1.PhaseInitializing) {
		st.Message = shortfall
	}
	if upReason != "" && p.refusal == "" && p.blocked == "" {
		st.Message = upMsg
	}
	if bg := c.Status.BreakGlass; bg != nil && bg.Active {
		// Invariant 7: a person must act; the message says where to start.
		st.Phase = baov1.PhaseBreakGlass
		st.Message = fmt.Sprintf("Break-glass (%s): every automation of this cluster stopped: %s. See status.breakGlass.recoverySteps, "+
			"then set %s to status.breakGlass.nonce", bg.Reason, bg.Message, baov1.AnnotationBreakGlassAck)
	}
	if succeeded {
		st.ObservedGeneration = c.Generation
	}
}

// versionChangePending says, in a sentence, that spec.version differs from what runs
// and no upgrade is in progress.
func versionChangePending(c *baov1.OpenBaoCluster) string {
	cur := c.Status.CurrentVersion
	if cur == "" || c.Status.Upgrade != nil || normalizeVersion(c.Spec.Version) == cur || rolledBackTarget(c) != nil {
		return ""
	}
	return fmt.Sprintf("spec.version %s differs from the running %s; waiting for the upgrade manager to plan the change", normalizeVersion(c.Spec.Version), cur)
}

// upgradeState says what the upgrade in progress does, for the phase and the message.
func upgradeState(c *baov1.OpenBaoCluster) (baov1.Reason, string) {
	up := c.Status.Upgrade
	if up == nil {
		return "", ""
	}
	if f := up.Failure; f != nil {
		at := f.Pod
		if at == "" {
			at = "the start"
		}
		return baov1.ReasonUpgradeFailed, fmt.Sprintf("upgrade to %s failed at %s (%s): %s. Fix the cause, then set the baokeeper.dev/retry annotation to a new value",
			up.TargetVersion, at, f.Reason, f.Message)
	}
	rollout := up.Kind == baov1.OperationRollout
	if up.CurrentStep == nil && len(up.CompletedPods) == 0 && up.Plan != nil {
		for _, pc := range up.Plan.Prechecks {
			if pc.Result != baov1.PrecheckFailed {
				continue
			}
			if rollout {
				return baov1.ReasonUpgradeBlocked, fmt.Sprintf("rollout of the pod template (%s) waits for precheck %s: %s", up.Changes, pc.Name, pc.Message)
			}
			return baov1.ReasonUpgradeBlocked, fmt.Sprintf("upgrade to %s waits for precheck %s: %s", up.TargetVersion, pc.Name, pc.Message)
		}
	}
	total := 0
	if up.Plan != nil {
		total = len(up.Plan.Pods)
	}
	what := "starting"
	if up.WaitingFor != "" {
		what = up.WaitingFor
	}
	msg := fmt.Sprintf("upgrading %s to %s (%d of %d members done): %s", up.FromVersion, up.TargetVersion, len(up.CompletedPods), total, what)
	if rollout {
		msg = fmt.Sprintf("rolling out the pod template, %s (%d of %d members restarted): %s", up.Changes, len(up.CompletedPods), total, what)
	}
	if up.Strategy == baov1.BlueGreenStrategy {
		stage, done, all := "starting", int32(0), int32(0)
		if p := up.Progress; p != nil {
			stage, done, all = p.Stage, p.Completed, p.Total
		}
		msg = fmt.Sprintf("blue-green upgrade from %s to %s, phase %s (%d of %d phases done): %s", up.FromVersion, up.TargetVersion, stage, done, all, what)
	}
	if up.DeferredVersion != "" {
		msg += fmt.Sprintf("; spec.version is now %s, which is planned once this upgrade finishes (a member was already replaced, so it cannot be cancelled)", up.DeferredVersion)
	}
	return baov1.ReasonUpgrading, msg
}

func wasRunning(c *baov1.OpenBaoCluster) bool {
	return c.Status.Phase == baov1.PhaseRunning || c.Status.Phase == baov1.PhaseDegraded || c.Status.Phase == baov1.PhaseUpgrading ||
		c.Status.Phase == baov1.PhaseScaling
}

func initializingMessage(c *baov1.OpenBaoCluster, notReady []string, ready, replicas int32) string {
	if len(notReady) == 0 {
		return fmt.Sprintf("%d of %d members Ready; waiting for the StatefulSet status to catch up", ready, replicas)
	}
	return fmt.Sprintf("Waiting for %s to become Ready (initialized and unsealed); %d of %d members Ready", notReady[0], ready, replicas)
}

func statusMessage(c *baov1.OpenBaoCluster, p *pass, ready, replicas int32, notReady []string, pending string) string {
	switch {
	case p.refusal != "":
		return p.refusal
	case p.blocked != "":
		return p.blocked
	case c.Status.Phase == baov1.PhasePending:
		return "Creating the workload objects"
	case c.Status.Phase == baov1.PhaseInitializing:
		return initializingMessage(c, notReady, ready, replicas)
	case c.Status.Phase == baov1.PhaseDegraded:
		return fmt.Sprintf("%d of %d members Ready; waiting for %s", ready, replicas, strings.Join(notReady, ", "))
	case pending != "":
		return pending
	default:
		v := c.Status.CurrentVersion
		if v == "" {
			v = "an unknown version"
		}
		versions := map[string]bool{}
		for _, m := range c.Status.Members {
			if m.Version == "" {
				// Not read yet (a member that just restarted): the next poll reads it,
				// and an empty version is no version to report.
				continue
			}
			versions[m.Version] = true
		}
		if len(versions) > 1 {
			vs := make([]string, 0, len(versions))
			for k := range versions {
				vs = append(vs, k)
			}
			slices.Sort(vs)
			return fmt.Sprintf("%d of %d members Ready; members report versions %s", ready, replicas, strings.Join(vs, ", "))
		}
		msg := fmt.Sprintf("%d of %d members Ready, running %s", ready, replicas, v)
		if lr := rolledBackTarget(c); lr != nil {
			msg += fmt.Sprintf("; the upgrade to %s was rolled back (condition RolledBack): set spec.version to %s, or %s to a new value to try again",
				lr.TargetVersion, v, baov1.AnnotationRetry)
		}
		return msg
	}
}

// rolledBackTarget is the last rollback while spec.version still names its target
// and no retry allows it again: the upgrade manager holds, and the status says so
// instead of "waiting for the upgrade manager".
func rolledBackTarget(c *baov1.OpenBaoCluster) *baov1.RollbackRecord {
	lr := c.Status.LastRollback
	if lr == nil || lr.Retry != "" || c.Status.Upgrade != nil || normalizeVersion(c.Spec.Version) != lr.TargetVersion {
		return nil
	}
	return lr
}

func ptr[T any](v T) *T { return &v }

// refusalReason is the SpecValid reason of the pass's refusal.
func refusalReason(p *pass) baov1.Reason {
	if p.refusalReason != "" {
		return p.refusalReason
	}
	if p.decision != nil {
		return baov1.Reason(p.decision.Reason)
	}
	return baov1.ReasonSpecRefused
}

// scalingState says what the membership change in progress does.
func scalingState(c *baov1.OpenBaoCluster) (baov1.Reason, string) {
	s := c.Status.Scaling
	if s == nil {
		return "", ""
	}
	done := "nothing yet"
	if len(s.Completed) > 0 {
		done = strings.Join(s.Completed, ", ")
	}
	if f := s.Failure; f != nil && s.FromReplicas == s.TargetReplicas {
		return baov1.ReasonScalingFailed, fmt.Sprintf("making every member of %d a voter failed at %s (%s): %s. Fix the cause, then set the baokeeper.dev/retry annotation to a new value",
			s.TargetReplicas, f.Pod, f.Reason, f.Message)
	}
	if f := s.Failure; f != nil {
		return baov1.ReasonScalingFailed, fmt.Sprintf("scaling from %d to %d members failed at %s (%s): %s. Fix the cause, then set the baokeeper.dev/retry annotation to a new value",
			s.FromReplicas, s.TargetReplicas, f.Pod, f.Reason, f.Message)
	}
	what := s.WaitingFor
	if what == "" {
		what = "starting"
	}
	if s.FromReplicas == s.TargetReplicas {
		return baov1.ReasonScaling, fmt.Sprintf("making every member of %d a voter (done: %s): %s", s.TargetReplicas, done, what)
	}
	return baov1.ReasonScaling, fmt.Sprintf("scaling from %d to %d members (done: %s): %s", s.FromReplicas, s.TargetReplicas, done, what)
}
