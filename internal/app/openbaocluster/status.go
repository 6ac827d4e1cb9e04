package openbaocluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// computeStatus derives the whole status from the observation and what the pass did.
// It mutates memory only; statusapply writes it. observedGeneration advances only when
// the pass succeeded. It first gathers the facts every condition reads (statusFacts),
// then each condition has its own mutator, in the order below: what one condition
// says never depends on what another was set to in this pass.
func computeStatus(c *baov1.OpenBaoCluster, obs *observation, p *pass, succeeded bool) {
	st := &c.Status
	setJWTAudience(c, obs, p)
	f := setMembers(c, obs)
	set := newConditionSetter(c, obs.now)
	setAvailable(set, f)
	setInitialized(set, c, f)
	setSpecValid(set, p)
	setTLS(set, c, p, obs.now)
	setDegraded(set, c, p, f)
	setPhase(set, c, obs, p, f)
	setMessage(c, p, f)
	if succeeded {
		st.ObservedGeneration = c.Generation
	}
}

// setJWTAudience records the audience of the cluster's JWT roles once: the one this
// pass rendered into the initialization, or the one the ConfigMap says an earlier
// pass rendered (its status write may have failed), or, for a cluster that
// initialized before audiences were recorded (judged before this pass changes the
// conditions), the legacy one its roles were written with.
func setJWTAudience(c *baov1.OpenBaoCluster, obs *observation, p *pass) {
	switch {
	case c.Status.JWTAudience != "":
	case p.jwtAudience != "":
		c.Status.JWTAudience = p.jwtAudience
	default:
		if a := configMapAudience(c, obs); a != "" {
			c.Status.JWTAudience = a
		} else if wasInitialized(c) {
			c.Status.JWTAudience = workload.LegacyTokenAudience
		}
	}
}

// configMapAudience is the audience annotation of the cluster's ConfigMap as observed.
func configMapAudience(c *baov1.OpenBaoCluster, obs *observation) string {
	for _, e := range obs.existing {
		if e.Ref.Kind == workload.KindConfigMap && e.Ref.Name == workload.NamesFor(c).ConfigMap() {
			return e.Annotations[workload.AnnotationJWTAudience]
		}
	}
	return ""
}

// recordedAudience is the audience the cluster's roles were written with, for a pass
// that does not render the initialization: status, else the ConfigMap, else
// JWTAudience's rule.
func recordedAudience(c *baov1.OpenBaoCluster, obs *observation) string {
	if c.Status.JWTAudience == "" {
		if a := configMapAudience(c, obs); a != "" {
			return a
		}
	}
	return workload.JWTAudience(c)
}

// statusFacts are what the conditions of one pass are derived from.
type statusFacts struct {
	replicas, ready, quorum int32
	notReady, desired       []string
	// raftProblem says why Raft cannot serve (no leader, quorum lost); "" when it can.
	raftProblem string
	// availableReason and availableMessage are the Available condition's.
	availableReason  baov1.Reason
	availableMessage string
	// shortfall says which members do not vote while every member is Ready; "" when
	// the failure tolerance is what the size promises.
	shortfall string
	// initialized: the cluster initialized itself (now, or in an earlier pass).
	initialized bool
	// allReady: every member Ready and the StatefulSet controller caught up.
	allReady bool
	// pending says that spec.version differs from what runs and nothing plans it yet.
	pending string
	// opReason and opMessage describe the operation in progress (an upgrade, a
	// rollout or a scaling); "" when none runs.
	opReason  baov1.Reason
	opMessage string
}

// conditionSetter sets one condition of c at now, for the cluster's generation.
type conditionSetter func(t baov1.ConditionType, ok bool, reason baov1.Reason, msg string)

func newConditionSetter(c *baov1.OpenBaoCluster, now time.Time) conditionSetter {
	return func(t baov1.ConditionType, ok bool, reason baov1.Reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
			Type: string(t), Status: status, Reason: string(reason), Message: msg,
			ObservedGeneration: c.Generation, LastTransitionTime: metav1.NewTime(now),
		})
	}
}

// setMembers writes status.members, readyMembers, voters, leader and raft, and
// returns the facts the conditions are derived from.
func setMembers(c *baov1.OpenBaoCluster, obs *observation) statusFacts {
	st := &c.Status
	f := statusFacts{replicas: c.GetReplicas()}
	n := workload.NamesFor(c)
	st.Members = st.Members[:0]
	rv := newRaftView(obs)
	for i := range max(f.replicas, obs.stsReplicas()) {
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
		if i < f.replicas {
			f.desired = append(f.desired, name)
			if m.Ready {
				f.ready++
			} else {
				f.notReady = append(f.notReady, name)
			}
		}
		st.Members = append(st.Members, m)
	}
	st.ReadyMembers = f.ready
	if len(st.Members) == 0 {
		st.Members = nil
	}
	st.Voters, st.Leader, st.Raft = rv.voters(f.replicas), rv.leader, rv.counts()

	f.initialized = wasInitialized(c) || f.ready > 0
	f.allReady = f.ready == f.replicas && obs.stsCurrent()
	f.quorum = f.replicas/2 + 1
	f.availableReason, f.availableMessage = rv.availability(f.ready, f.replicas)
	if f.ready >= f.quorum && (f.availableReason == baov1.ReasonNoLeader || f.availableReason == baov1.ReasonQuorumLost) {
		f.raftProblem = f.availableMessage
	}
	// A cluster that serves with a member that does not vote has lost the failure
	// tolerance its size promises: one more failure and it stops.
	if f.raftProblem == "" && f.ready == f.replicas {
		f.shortfall = rv.toleranceShortfall(f.desired)
	}
	f.pending = versionChangePending(c)
	f.opReason, f.opMessage = restoreState(c)
	if f.opReason == "" {
		f.opReason, f.opMessage = upgradeState(c)
	}
	if f.opReason == "" {
		f.opReason, f.opMessage = scalingState(c)
	}
	return f
}

// restoreState is the restore of a cluster that starts from a snapshot, until it
// succeeded: Restoring while it runs, RestoreFailed once it stopped.
func restoreState(c *baov1.OpenBaoCluster) (baov1.Reason, string) {
	if c.Spec.Bootstrap == nil || c.Restored() {
		return "", ""
	}
	r := c.Status.Restore
	switch {
	case r == nil:
		return baov1.ReasonRestoring, fmt.Sprintf("Restoring s3://%s/%s once %s initialized; no client Service until it is restored",
			c.Spec.Bootstrap.FromSnapshot.S3.Bucket, c.Spec.Bootstrap.FromSnapshot.Key, workload.NamesFor(c).Member(0))
	case r.Step == baov1.RestoreStepFailed:
		return baov1.ReasonRestoreFailed, r.Failure
	}
	return baov1.ReasonRestoring, fmt.Sprintf("Restoring %s (step %s): %s; no client Service until it is restored", r.Source, r.Step, r.WaitingFor)
}

// setAvailable: a majority of members Ready, and Raft with a leader and its quorum.
func setAvailable(set conditionSetter, f statusFacts) {
	switch {
	case f.ready < f.quorum:
		set(baov1.ConditionAvailable, false, baov1.ReasonQuorumNotReady, fmt.Sprintf("%d of %d members are Ready; a majority needs %d", f.ready, f.replicas, f.quorum))
	case f.raftProblem != "":
		set(baov1.ConditionAvailable, false, f.availableReason, f.raftProblem)
	default:
		set(baov1.ConditionAvailable, true, f.availableReason, f.availableMessage)
	}
}

// setInitialized: once true, it stays true.
func setInitialized(set conditionSetter, c *baov1.OpenBaoCluster, f statusFacts) {
	if f.initialized {
		set(baov1.ConditionInitialized, true, baov1.ReasonSelfInitialized, "The cluster initialized itself; self-initialization is now disabled")
		return
	}
	set(baov1.ConditionInitialized, false, baov1.ReasonWaitingForInitialization, fmt.Sprintf("Waiting for %s to initialize the cluster and become Ready", workload.NamesFor(c).Member(0)))
}

// setSpecValid: the pass's refusal of the spec, or its acceptance by the policy.
func setSpecValid(set conditionSetter, p *pass) {
	if p.refusal != "" {
		set(baov1.ConditionSpecValid, false, refusalReason(p), p.refusal)
	} else if p.decision != nil {
		set(baov1.ConditionSpecValid, true, baov1.ReasonSpecAccepted, "spec.version and spec.image passed the version and image policy")
	}
}

// setTLS writes the TLSReady condition and status.tls; observedAt stays when the
// certificate is the one seen before.
func setTLS(set conditionSetter, c *baov1.OpenBaoCluster, p *pass, now time.Time) {
	if p.tlsReason != "" {
		set(baov1.ConditionTLSReady, p.tlsReason != baov1.ReasonUserCertificateMissing && p.tlsReason != baov1.ReasonUserCertificateInvalid, p.tlsReason, p.tlsMessage)
	}
	switch {
	case !p.notAfter.IsZero():
		seen := ptr(metav1.NewTime(now))
		if prev := c.Status.TLS; prev != nil && prev.CertificateSHA256 == p.certSHA256 && prev.ObservedAt != nil {
			seen = prev.ObservedAt
		}
		c.Status.TLS = &baov1.TLSStatus{NotAfter: ptr(metav1.NewTime(p.notAfter)), CertificateSHA256: p.certSHA256, ObservedAt: seen}
		if !p.renewAt.IsZero() && c.Spec.TLS.SecretName == "" {
			c.Status.TLS.RenewAt = ptr(metav1.NewTime(p.renewAt))
		}
	case c.Spec.TLS.SecretName != "":
		c.Status.TLS = nil
	}
}

// setDegraded: true when the cluster serves less than its spec promises, with the
// first reason in order of what a person must fix first.
func setDegraded(set conditionSetter, c *baov1.OpenBaoCluster, p *pass, f statusFacts) {
	switch {
	case p.refusal != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonSpecRefused, p.refusal)
	case p.blocked != "":
		set(baov1.ConditionDegraded, true, p.blockedReason, p.blocked)
	case f.opReason == baov1.ReasonUpgradeFailed || f.opReason == baov1.ReasonScalingFailed || f.opReason == baov1.ReasonRestoreFailed:
		set(baov1.ConditionDegraded, true, f.opReason, f.opMessage)
	case f.opReason == baov1.ReasonRestoring:
		set(baov1.ConditionDegraded, false, f.opReason, f.opMessage)
	case f.opReason == baov1.ReasonScaling:
		set(baov1.ConditionDegraded, false, f.opReason, "A membership change is in progress: "+f.opMessage)
	case f.opReason != "":
		set(baov1.ConditionDegraded, false, f.opReason, "A version change is in progress: "+f.opMessage)
	case hasServed(c) && f.ready < f.replicas:
		set(baov1.ConditionDegraded, true, baov1.ReasonMembersNotReady, fmt.Sprintf("Members not Ready: %s", strings.Join(f.notReady, ", ")))
	case f.raftProblem != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonRaftUnavailable, f.raftProblem)
	case f.shortfall != "":
		set(baov1.ConditionDegraded, true, baov1.ReasonFailureToleranceLow, f.shortfall)
	default:
		set(baov1.ConditionDegraded, false, baov1.ReasonAllMembersReady, fmt.Sprintf("%d of %d members are Ready", f.ready, f.replicas))
	}
}

// setPhase writes status.phase and the Progressing condition. A cluster that has
// served (hasServed) is never Initializing again: one that loses members or its
// quorum is Degraded.
func setPhase(set conditionSetter, c *baov1.OpenBaoCluster, obs *observation, p *pass, f statusFacts) {
	st := &c.Status
	served := hasServed(c)
	switch {
	case obs.sts == nil && !p.createdSTS:
		st.Phase = baov1.PhasePending
		set(baov1.ConditionProgressing, true, baov1.ReasonCreating, "Creating the workload objects")
	case f.opReason == baov1.ReasonRestoring || f.opReason == baov1.ReasonRestoreFailed:
		// Not Running before the data is the snapshot's: clients are kept out.
		st.Phase = baov1.PhaseInitializing
		if f.opReason == baov1.ReasonRestoreFailed {
			st.Phase = baov1.PhaseFailed
		}
		set(baov1.ConditionProgressing, f.opReason == baov1.ReasonRestoring, f.opReason, f.opMessage)
	case !served && (!f.initialized || !f.allReady):
		st.Phase = baov1.PhaseInitializing
		set(baov1.ConditionProgressing, true, baov1.ReasonInitializing, initializingMessage(c, f.notReady, f.ready, f.replicas))
	case !wasRunning(c) && f.shortfall != "" && (f.opReason == "" || f.opReason == baov1.ReasonScaling):
		// A new cluster is Running once every member votes, not before: until then
		// losing the first member's volume would lose the cluster.
		st.Phase = baov1.PhaseInitializing
		set(baov1.ConditionProgressing, true, baov1.ReasonWaitingForVoters, "Waiting for every member to vote. "+f.shortfall)
	case f.opReason == baov1.ReasonScaling || f.opReason == baov1.ReasonScalingFailed:
		st.Phase = baov1.PhaseScaling
		set(baov1.ConditionProgressing, f.opReason == baov1.ReasonScaling, f.opReason, f.opMessage)
	case f.opReason != "":
		st.Phase = baov1.PhaseUpgrading
		set(baov1.ConditionProgressing, f.opReason != baov1.ReasonUpgradeFailed, f.opReason, f.opMessage)
	case !f.allReady || f.raftProblem != "" || f.shortfall != "" || !f.initialized:
		st.Phase = baov1.PhaseDegraded
		set(baov1.ConditionProgressing, false, baov1.ReasonReconciled, "The workload objects match the spec")
	case f.pending != "":
		st.Phase = baov1.PhaseRunning
		set(baov1.ConditionProgressing, true, baov1.ReasonUpgradePending, f.pending)
	default:
		st.Phase = baov1.PhaseRunning
		set(baov1.ConditionProgressing, false, baov1.ReasonReconciled, "The workload objects match the spec")
	}
	if p.refusal != "" && obs.sts == nil {
		st.Phase = baov1.PhaseFailed
	}
	if bg := st.BreakGlass; bg != nil && bg.Active {
		st.Phase = baov1.PhaseBreakGlass
	}
}

// setMessage writes status.message: what a person reads first.
func setMessage(c *baov1.OpenBaoCluster, p *pass, f statusFacts) {
	st := &c.Status
	st.Message = statusMessage(c, p, f.ready, f.replicas, f.notReady, f.pending)
	quiet := p.refusal == "" && p.blocked == ""
	if f.raftProblem != "" && quiet && st.Phase == baov1.PhaseDegraded && f.ready == f.replicas {
		st.Message = f.raftProblem
	}
	if f.shortfall != "" && quiet && f.ready == f.replicas && (st.Phase == baov1.PhaseDegraded || st.Phase == baov1.PhaseInitializing) {
		st.Message = f.shortfall
	}
	if f.opReason != "" && quiet {
		st.Message = f.opMessage
	}
	if bg := st.BreakGlass; bg != nil && bg.Active {
		// Invariant 7: a person must act; the message says where to start.
		st.Message = fmt.Sprintf("Break-glass (%s): every automation of this cluster stopped: %s. See status.breakGlass.recoverySteps, "+
			"then set %s to status.breakGlass.nonce", bg.Reason, bg.Message, baov1.AnnotationBreakGlassAck)
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
		if pc := upgrade.FirstUnpassedPrecheck(up.Plan.Prechecks); pc != nil {
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
	if up.Strategy == baov1.OfflineStrategy {
		done, all := int32(0), int32(total)
		if p := up.Progress; p != nil {
			done, all = p.Completed, p.Total
		}
		msg = fmt.Sprintf("offline upgrade from %s to %s (%d of %d members on the target): %s", up.FromVersion, up.TargetVersion, done, all, what)
	}
	if up.DeferredVersion != "" {
		msg += fmt.Sprintf("; spec.version is now %s, which is planned once this upgrade finishes (a member was already replaced, so it cannot be cancelled)", up.DeferredVersion)
	}
	return baov1.ReasonUpgrading, msg
}

// wasRunning reports whether the last status showed a cluster past its start:
// Running, Degraded, in an operation, or in break-glass (entered only during one).
func wasRunning(c *baov1.OpenBaoCluster) bool {
	switch c.Status.Phase {
	case baov1.PhaseRunning, baov1.PhaseDegraded, baov1.PhaseUpgrading, baov1.PhaseScaling, baov1.PhaseBreakGlass:
		return true
	}
	return false
}

// hasServed reports whether the cluster has served: it was past its start, or every
// member once reported one version (status.currentVersion, set once and kept). Such
// a cluster that loses members, or its quorum, is Degraded, never Initializing.
func hasServed(c *baov1.OpenBaoCluster) bool {
	return wasRunning(c) || c.Status.CurrentVersion != ""
}

func initializingMessage(c *baov1.OpenBaoCluster, notReady []string, ready, replicas int32) string {
	if len(notReady) == 0 {
		return stsBehindMessage(ready, replicas)
	}
	return fmt.Sprintf("Waiting for %s to become Ready (initialized and unsealed); %d of %d members Ready", notReady[0], ready, replicas)
}

// stsBehindMessage: every member is Ready but the StatefulSet's status has not caught
// up with its spec yet (its controller has not observed the last change).
func stsBehindMessage(ready, replicas int32) string {
	return fmt.Sprintf("%d of %d members Ready; waiting for the StatefulSet status to catch up", ready, replicas)
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
	case c.Status.Phase == baov1.PhaseDegraded && len(notReady) == 0:
		return stsBehindMessage(ready, replicas)
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
