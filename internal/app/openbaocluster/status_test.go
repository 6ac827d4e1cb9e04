package openbaocluster

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

type obsOpt func(*observation)

// withMembers adds members bao-0..n-1; the first ready ones are Ready and report version.
func withMembers(n, ready int, version string) obsOpt {
	return func(o *observation) {
		for i := range n {
			name := "bao-" + string(rune('0'+i))
			st := corev1.ConditionFalse
			if i < ready {
				st = corev1.ConditionTrue
				o.health[name] = &openbao.Health{Initialized: true, Version: version}
			}
			o.pods[name] = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "openbao", Image: "ghcr.io/openbao/openbao:" + version}}},
				Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
			}
		}
	}
}

func withSTS(current bool) obsOpt {
	return func(o *observation) {
		o.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		if current {
			o.sts.Status.ObservedGeneration = 2
		}
	}
}

func newObs(opts ...obsOpt) *observation {
	o := &observation{now: now, pods: map[string]*corev1.Pod{}, health: map[string]*openbao.Health{}, healthErrs: map[string]string{}}
	for _, f := range opts {
		f(o)
	}
	return o
}

type clusterOpt func(*baov1.OpenBaoCluster)

func withPhase(p baov1.ClusterPhase) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Status.Phase = p }
}

func withCurrent(v string) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Status.CurrentVersion = v }
}

func withInitialized() clusterOpt {
	return func(c *baov1.OpenBaoCluster) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: string(baov1.ConditionInitialized), Status: metav1.ConditionTrue, Reason: "SelfInitialized"})
	}
}

func withSpecVersion(v string) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Version = v }
}

func newCluster(opts ...clusterOpt) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns", Generation: 4},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
	}
	for _, f := range opts {
		f(c)
	}
	return c
}

func cond(c *baov1.OpenBaoCluster, t baov1.ConditionType) metav1.Condition {
	got := meta.FindStatusCondition(c.Status.Conditions, string(t))
	if got == nil {
		return metav1.Condition{}
	}
	return *got
}

func TestComputeStatusPhases(t *testing.T) {
	allowed := &upgrade.Decision{Allowed: true}
	cases := []struct {
		name           string
		reason         string
		cluster        *baov1.OpenBaoCluster
		obs            *observation
		pass           pass
		wantPhase      baov1.ClusterPhase
		wantAvailable  metav1.ConditionStatus
		wantDegraded   baov1.Reason
		wantProgress   baov1.Reason
		wantInit       metav1.ConditionStatus
		wantCurrent    string
		wantMsgContain string
	}{
		{
			name: "nothing created yet", reason: "before the first apply there is no StatefulSet",
			cluster: newCluster(), obs: newObs(), pass: pass{decision: allowed},
			wantPhase: baov1.PhasePending, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonCreating, wantInit: metav1.ConditionFalse, wantMsgContain: "Creating",
		},
		{
			name: "no member ready", reason: "ordinal 0 has not initialized yet; the message names it",
			cluster: newCluster(), obs: newObs(withSTS(true), withMembers(1, 0, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseInitializing, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonInitializing, wantInit: metav1.ConditionFalse, wantMsgContain: "Waiting for bao-0",
		},
		{
			name: "first member ready", reason: "Ready implies initialized and unsealed, so Initialized turns True while bring-up continues",
			cluster: newCluster(), obs: newObs(withSTS(true), withMembers(2, 1, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseInitializing, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonInitializing, wantInit: metav1.ConditionTrue, wantMsgContain: "Waiting for bao-1",
		},
		{
			name: "all ready but StatefulSet status stale", reason: "a StatefulSet status counts only once observedGeneration caught up",
			cluster: newCluster(withInitialized()), obs: newObs(withSTS(false), withMembers(3, 3, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseInitializing, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonInitializing, wantInit: metav1.ConditionTrue, wantMsgContain: "StatefulSet status",
		},
		{
			name: "all ready", reason: "every member Ready: Running (currentVersion is the upgrade manager's to seed)",
			cluster: newCluster(withInitialized()), obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantMsgContain: "3 of 3 members Ready, running an unknown version",
		},
		{
			name: "one member lost", reason: "a Running cluster with a majority is Degraded but Available",
			cluster: newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0")), obs: newObs(withSTS(true), withMembers(3, 2, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonMembersNotReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "waiting for bao-2",
		},
		{
			name: "every member Ready, StatefulSet status behind", reason: "bug (found by envtest): the message read \"3 of 3 members Ready; waiting for \" and named nothing; it says what it waits for",
			cluster: newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0")), obs: newObs(withSTS(false), withMembers(3, 3, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "3 of 3 members Ready; waiting for the StatefulSet status to catch up",
		},
		{
			name: "quorum lost", reason: "without a majority the cluster is not Available",
			cluster: newCluster(withInitialized(), withPhase(baov1.PhaseDegraded), withCurrent("2.4.0")), obs: newObs(withSTS(true), withMembers(3, 1, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonMembersNotReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "bao-1, bao-2",
		},
		{
			name: "members disagree on version", reason: "the message lists the versions members report",
			cluster: newCluster(withInitialized()),
			obs: func() *observation {
				o := newObs(withSTS(true), withMembers(3, 3, "2.4.0"))
				o.health["bao-2"] = &openbao.Health{Initialized: true, Version: "2.4.1"}
				return o
			}(),
			pass:      pass{decision: allowed},
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "", wantMsgContain: "2.4.0, 2.4.1",
		},
		{
			name: "version change requested", reason: "the workload loop reports a pending change and keeps running what runs",
			cluster: newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0"), withSpecVersion("2.4.1")),
			obs:     newObs(withSTS(true), withMembers(3, 3, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonUpgradePending, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "spec.version 2.4.1 differs from the running 2.4.0",
		},
		{
			name: "spec.version names a rolled-back target", reason: "nothing is pending: the upgrade manager holds, and the message says what to do",
			cluster: func() *baov1.OpenBaoCluster {
				c := newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0"), withSpecVersion("2.4.1"))
				c.Status.LastRollback = &baov1.RollbackRecord{FromVersion: "2.4.0", TargetVersion: "2.4.1", Reason: "ValidationFailed"}
				return c
			}(),
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0",
			wantMsgContain: "3 of 3 members Ready, running 2.4.0; the upgrade to 2.4.1 was rolled back (condition RolledBack): set spec.version to 2.4.0, or baokeeper.dev/retry",
		},
		{
			name: "break-glass", reason: "the phase and the message say automation stopped and where to start",
			cluster: func() *baov1.OpenBaoCluster {
				c := newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0"))
				c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost, Message: "2 of 3 voters do not answer"}
				return c
			}(),
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0")), pass: pass{decision: allowed},
			wantPhase: baov1.PhaseBreakGlass, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonAllMembersReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0",
			wantMsgContain: "Break-glass (QuorumLost): every automation of this cluster stopped: 2 of 3 voters do not answer. See status.breakGlass.recoverySteps",
		},
		{
			name: "spec refused on a running cluster", reason: "a refusal is Degraded with the policy's message, and the cluster still reports Running",
			cluster:   newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0"), withSpecVersion("2.3.0")),
			obs:       newObs(withSTS(true), withMembers(3, 3, "2.4.0")),
			pass:      pass{decision: &upgrade.Decision{Reason: upgrade.ReasonDowngrade}, refusal: "spec.version 2.3.0 is older than the running version 2.4.0"},
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonSpecRefused,
			wantProgress: baov1.ReasonUpgradePending, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "older than the running version",
		},
		{
			name: "spec refused before anything exists", reason: "a new cluster with a refused spec has nothing running: Failed",
			cluster: newCluster(withSpecVersion("2.4")), obs: newObs(),
			pass:      pass{decision: &upgrade.Decision{Reason: upgrade.ReasonInvalidVersion}, refusal: `spec.version "2.4" is not a semantic version`},
			wantPhase: baov1.PhaseFailed, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonSpecRefused,
			wantProgress: baov1.ReasonCreating, wantInit: metav1.ConditionFalse, wantMsgContain: "not a semantic version",
		},
		{
			name: "lost its quorum after break-glass", reason: "bug: an initialized cluster whose phase was BreakGlass was shown as Initializing when members went down; one that has served is Degraded",
			cluster:   newCluster(withInitialized(), withPhase(baov1.PhaseBreakGlass), withCurrent("2.4.0")),
			obs:       newObs(withSTS(true), withMembers(3, 1, "2.4.0")),
			pass:      pass{decision: allowed},
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonMembersNotReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "1 of 3 members Ready",
		},
		{
			name: "lost its quorum before it was ever Running", reason: "a cluster whose members once reported one version (currentVersion) has served: losing members makes it Degraded, not Initializing",
			cluster:   newCluster(withInitialized(), withPhase(baov1.PhaseInitializing), withCurrent("2.4.0")),
			obs:       newObs(withSTS(true), withMembers(3, 0, "2.4.0")),
			pass:      pass{decision: allowed},
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionFalse, wantDegraded: baov1.ReasonMembersNotReady,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "0 of 3 members Ready",
		},
		{
			name: "seal key missing", reason: "an initialized cluster whose seal key vanished says how to recover",
			cluster:   newCluster(withInitialized(), withPhase(baov1.PhaseRunning), withCurrent("2.4.0")),
			obs:       newObs(withSTS(true), withMembers(3, 3, "2.4.0")),
			pass:      pass{decision: allowed, blocked: "The static-seal key Secret bao-seal is missing", blockedReason: baov1.ReasonSealKeyMissing},
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantDegraded: baov1.ReasonSealKeyMissing,
			wantProgress: baov1.ReasonReconciled, wantInit: metav1.ConditionTrue, wantCurrent: "2.4.0", wantMsgContain: "bao-seal is missing",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := tc.pass
			p.cluster, p.obs = tc.cluster, tc.obs
			computeStatus(tc.cluster, tc.obs, &p, true)
			st := tc.cluster.Status
			g.Expect(st.Phase).To(Equal(tc.wantPhase), tc.reason)
			g.Expect(cond(tc.cluster, baov1.ConditionAvailable).Status).To(Equal(tc.wantAvailable), tc.reason)
			g.Expect(cond(tc.cluster, baov1.ConditionDegraded).Reason).To(Equal(string(tc.wantDegraded)), tc.reason)
			g.Expect(cond(tc.cluster, baov1.ConditionProgressing).Reason).To(Equal(string(tc.wantProgress)), tc.reason)
			g.Expect(cond(tc.cluster, baov1.ConditionInitialized).Status).To(Equal(tc.wantInit), tc.reason)
			g.Expect(st.CurrentVersion).To(Equal(tc.wantCurrent), tc.reason)
			g.Expect(st.Message).To(ContainSubstring(tc.wantMsgContain), tc.reason)
			g.Expect(st.ObservedGeneration).To(Equal(int64(4)))
			for _, c := range st.Conditions {
				g.Expect(c.ObservedGeneration).To(Equal(int64(4)), "condition %s", c.Type)
			}
		})
	}
}

func TestComputeStatusKeepsObservedGenerationOnFailure(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Status.ObservedGeneration = 3
	computeStatus(c, newObs(), &pass{decision: &upgrade.Decision{Allowed: true}}, false)
	g.Expect(c.Status.ObservedGeneration).To(Equal(int64(3)), "observedGeneration advances only when the pass succeeded")
}

func TestComputeStatusIsStableWhenNothingChanged(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withInitialized())
	obs := newObs(withSTS(true), withMembers(3, 3, "2.4.0"))
	computeStatus(c, obs, &pass{decision: &upgrade.Decision{Allowed: true}}, true)
	first := c.Status.DeepCopy()
	later := *obs
	later.now = now.Add(time.Hour)
	computeStatus(c, &later, &pass{decision: &upgrade.Decision{Allowed: true}}, true)
	g.Expect(c.Status).To(Equal(*first), "an unchanged world yields an identical status, so no write is made")
}

func TestInitializedIsSticky(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withInitialized(), withPhase(baov1.PhaseDegraded))
	computeStatus(c, newObs(withSTS(true), withMembers(3, 0, "2.4.0")), &pass{decision: &upgrade.Decision{Allowed: true}}, true)
	g.Expect(cond(c, baov1.ConditionInitialized).Status).To(Equal(metav1.ConditionTrue),
		"once initialized, self-initialization must never be rendered again, even with no member Ready")
}

func TestJWTAudienceIsRecordedOnce(t *testing.T) {
	allowed := &upgrade.Decision{Allowed: true}
	t.Run("the audience the pass rendered into the initialization", func(t *testing.T) {
		c := newCluster()
		computeStatus(c, newObs(withSTS(true), withMembers(3, 0, "")), &pass{decision: allowed, jwtAudience: "openbao.baokeeper.dev/ns/bao"}, true)
		NewWithT(t).Expect(c.Status.JWTAudience).To(Equal("openbao.baokeeper.dev/ns/bao"))
	})
	t.Run("a cluster initialized before audiences were recorded: the legacy one", func(t *testing.T) {
		c := newCluster(withInitialized())
		computeStatus(c, newObs(withSTS(true), withMembers(3, 3, "2.4.0")), &pass{decision: allowed}, true)
		NewWithT(t).Expect(c.Status.JWTAudience).To(Equal("baokeeper"))
	})
	t.Run("the pass in which the first member becomes Ready does not take it for a legacy cluster", func(t *testing.T) {
		c := newCluster()
		computeStatus(c, newObs(withSTS(true), withMembers(3, 1, "2.4.0")), &pass{decision: allowed}, true)
		g := NewWithT(t)
		g.Expect(cond(c, baov1.ConditionInitialized).Status).To(Equal(metav1.ConditionTrue), "the pass marks it initialized")
		g.Expect(c.Status.JWTAudience).To(BeEmpty(), "judged on the status before this pass")
	})
	t.Run("the rendering pass's status write was lost: the ConfigMap says which audience", func(t *testing.T) {
		c := newCluster(withInitialized())
		obs := newObs(withSTS(true), withMembers(3, 3, "2.4.0"))
		obs.existing = []workload.ExistingObject{{Ref: workload.ObjectRef{Kind: workload.KindConfigMap, Name: "bao-config"},
			Annotations: map[string]string{workload.AnnotationJWTAudience: "openbao.baokeeper.dev/ns/bao"}}}
		computeStatus(c, obs, &pass{decision: allowed}, true)
		NewWithT(t).Expect(c.Status.JWTAudience).To(Equal("openbao.baokeeper.dev/ns/bao"), "not the legacy one")
	})
	t.Run("never changed once recorded", func(t *testing.T) {
		c := newCluster(withInitialized())
		c.Status.JWTAudience = "openbao.baokeeper.dev/ns/bao"
		computeStatus(c, newObs(withSTS(true), withMembers(3, 3, "2.4.0")), &pass{decision: allowed, jwtAudience: "other"}, true)
		NewWithT(t).Expect(c.Status.JWTAudience).To(Equal("openbao.baokeeper.dev/ns/bao"))
	})
}
