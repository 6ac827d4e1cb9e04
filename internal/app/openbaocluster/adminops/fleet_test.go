package adminops

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// pass decides one pass over s and leaves its status on s's object, as the
// status write would.
func pass(s *operation.Snapshot) operation.Plan {
	op := choose(s)
	if op == nil {
		return operation.Plan{}
	}
	p := op.Decide(s)
	if p.Status != nil {
		s.Object.Status = *p.Status
	}
	return p
}

func precheck(st *baov1.OpenBaoClusterStatus, name string) baov1.Precheck {
	for _, pc := range st.Upgrade.Plan.Prechecks {
		if pc.Name == name {
			return pc
		}
	}
	return baov1.Precheck{}
}

// A version change outside every maintenance window is planned, says until when
// it waits, sleeps until the window opens, and starts inside it.
func TestWindowHoldsTheStart(t *testing.T) {
	g := NewWithT(t)
	s := restingSnapshot() // 12:00 UTC
	s.Object.Spec.Upgrade.PreUpgradeSnapshot.Policy = baov1.SnapshotNever
	s.Object.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 13 * * *", Duration: "1h"}}
	s.Object.Spec.Version = "2.4.1"

	p := pass(s)
	g.Expect(p.Kind).To(Equal(operation.KindPersist))
	pc := precheck(&s.Object.Status, fleet.PrecheckWindow)
	g.Expect(pc.Result).To(Equal(baov1.PrecheckPending))
	g.Expect(pc.Message).To(ContainSubstring("waits until the next opens at 2026-12-03T13:00:00Z (in 1h0m0s)"))
	g.Expect(s.Object.Status.Upgrade.Plan.Prechecks[0].Name).To(Equal(fleet.PrecheckWindow), "named first")

	p = pass(s)
	g.Expect(p.Kind).To(Equal(operation.KindWait))
	g.Expect(p.RequeueAfter).To(Equal(5*time.Minute), "sleeps, bounded, instead of polling OpenBao every 2 s")
	g.Expect(s.Object.Status.OperationLock).To(BeNil(), "it takes no lock while it waits")

	s.Now = time.Date(2026, 12, 3, 12, 58, 0, 0, time.UTC)
	p = pass(s)
	g.Expect(p.RequeueAfter).To(Equal(2*time.Minute), "wakes as the window opens")

	s.Now = time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)
	p = pass(s)
	g.Expect(precheck(&s.Object.Status, fleet.PrecheckWindow).Result).To(Equal(baov1.PrecheckPassed))
	g.Expect(s.Object.Status.OperationLock).NotTo(BeNil(), "inside the window it starts")
	g.Expect(p.Kind).To(Equal(operation.KindApply))
}

// A rolling upgrade that runs when its window closes holds before the next member;
// with windowEnd Finish it goes on.
func TestWindowClosesMidWay(t *testing.T) {
	for _, end := range []baov1.WindowEndPolicy{baov1.WindowEndPause, baov1.WindowEndFinish} {
		t.Run(string(end), func(t *testing.T) {
			g := NewWithT(t)
			s := restingSnapshot()
			s.Object.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 11 * * *", Duration: "1h"}} // 11:00-12:00: closed at 12:00
			s.Object.Spec.Upgrade.WindowEnd = end
			s.Object.Spec.Version = "2.4.1"
			target := upgrade.DefaultImage("2.4.1")
			s.StatefulSet.Spec.Template.Spec.Containers[0].Image = target
			s.Members[1].Image, s.Members[1].Version = target, "2.4.1"
			s.Object.Status.Upgrade = &baov1.UpgradeStatus{ID: "u1", Kind: baov1.OperationVersion, Strategy: baov1.RollingUpdateStrategy,
				FromVersion: "2.4.0", TargetVersion: "2.4.1", TargetImage: target, StartedAt: &metav1.Time{Time: s.Now.Add(-10 * time.Minute)},
				Plan: &baov1.UpgradePlan{Pods: []string{"bao-1", "bao-2", "bao-0"}}, CompletedPods: []string{"bao-1"}}
			s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}

			p := pass(s)
			if end == baov1.WindowEndFinish {
				g.Expect(p.Kind).NotTo(Equal(operation.KindHold))
				g.Expect(s.Object.Status.Upgrade.CurrentStep).NotTo(BeNil(), "the next member's step begins")
				return
			}
			g.Expect(p.Kind).To(Equal(operation.KindHold))
			g.Expect(p.RequeueAfter).To(Equal(5*time.Minute), "it looks again when the next window opens, at most five minutes on")
			s.Now = time.Date(2026, 12, 4, 10, 59, 52, 0, time.UTC)
			g.Expect(pass(s).RequeueAfter).To(Equal(8*time.Second), "eight seconds before the next window: it looks again as it opens")
			s.Now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
			pass(s)
			g.Expect(s.Object.Status.Upgrade.WaitingFor).To(ContainSubstring(
				"the maintenance window closed (spec.upgrade.windowEnd: Pause): holding until the next opens at 2026-12-04T11:00:00Z"))
			g.Expect(s.Object.Status.Upgrade.WaitingFor).To(ContainSubstring("before bao-2"))
			g.Expect(s.Object.Status.Upgrade.CurrentStep).To(BeNil(), "no member is touched")
		})
	}
}

// The order across clusters: prod waits for staging to run the version and soak,
// and starts once it did.
func TestOrderHoldsTheStart(t *testing.T) {
	g := NewWithT(t)
	s := restingSnapshot()
	s.Object.Spec.Upgrade.PreUpgradeSnapshot.Policy = baov1.SnapshotNever
	s.Object.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "staging", Soak: ptr(baov1.Duration("30m"))}}
	s.Object.Spec.Version = "2.4.1"
	staging := baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "staging"}, Spec: baov1.OpenBaoClusterSpec{Version: "2.4.1"},
		Status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", WaitingFor: "replacing staging-1"}}}
	s.Fleet = operation.Fleet{Clusters: []baov1.OpenBaoCluster{staging}}

	pass(s)
	pc := precheck(&s.Object.Status, fleet.PrecheckOrder)
	g.Expect(pc.Result).To(Equal(baov1.PrecheckPending))
	g.Expect(pc.Message).To(Equal("waits for ns/staging, upgrading from 2.4.0 to 2.4.1 (replacing staging-1)"))
	g.Expect(s.Object.Status.Upgrade.Plan.Prechecks[0].Name).To(Equal(fleet.PrecheckOrder))
	p := pass(s)
	g.Expect(p.Kind).To(Equal(operation.KindWait))
	g.Expect(s.Object.Status.OperationLock).To(BeNil())

	// Staging completed 10 minutes ago: it soaks for 20 more.
	st := &s.Fleet.Clusters[0].Status
	st.Upgrade, st.CurrentVersion = nil, "2.4.1"
	st.Conditions = []metav1.Condition{{Type: string(baov1.ConditionAvailable), Status: metav1.ConditionTrue, LastTransitionTime: metav1.Time{Time: s.Now.Add(-time.Hour)}}}
	st.History = []baov1.HistoryEntry{{Kind: baov1.HistoryVersion, Outcome: baov1.OutcomeSucceeded, TargetVersion: "2.4.1", EndedAt: &metav1.Time{Time: s.Now.Add(-10 * time.Minute)}}}
	p = pass(s)
	g.Expect(precheck(&s.Object.Status, fleet.PrecheckOrder).Message).To(ContainSubstring("healthy for 10m0s of 30m0s, until 2026-12-03T12:20:00Z"))
	g.Expect(p.RequeueAfter).To(Equal(5 * time.Minute))

	s.Now = s.Now.Add(20 * time.Minute)
	p = pass(s)
	g.Expect(precheck(&s.Object.Status, fleet.PrecheckOrder).Result).To(Equal(baov1.PrecheckPassed))
	g.Expect(s.Object.Status.OperationLock).NotTo(BeNil(), "soaked: prod starts")
	g.Expect(p.Kind).To(Equal(operation.KindApply))

	// A rollout is not ordered.
	r := restingSnapshot()
	r.Object.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "missing"}}
	r.StatefulSet.Status.UpdateRevision = "r2"
	pass(r)
	g.Expect(r.Object.Status.Upgrade.Kind).To(Equal(baov1.OperationRollout))
	g.Expect(precheck(&r.Object.Status, fleet.PrecheckOrder).Name).To(BeEmpty())
}

// Every end of an upgrade leaves one history entry, in the write that ends it.
func TestHistoryOfAnUpgrade(t *testing.T) {
	g := NewWithT(t)
	s := restingSnapshot()
	s.Object.Spec.Version = "2.4.1"
	pass(s) // planned
	g.Expect(s.Object.Status.Upgrade).NotTo(BeNil())

	// Set back before it touched anything: cancelled, with an entry.
	s.Object.Spec.Version = "2.4.0"
	for range 3 {
		pass(s)
	}
	g.Expect(s.Object.Status.Upgrade).To(BeNil())
	g.Expect(s.Object.Status.History).To(HaveLen(1))
	g.Expect(s.Object.Status.History[0].Outcome).To(Equal(baov1.OutcomeCancelled))
	g.Expect(s.Object.Status.History[0].TargetVersion).To(Equal("2.4.1"))

	// An upgrade whose every member runs the target completes: a Succeeded entry.
	target := upgrade.DefaultImage("2.4.1")
	s.Object.Spec.Version = "2.4.1"
	s.StatefulSet.Spec.Template.Spec.Containers[0].Image = target
	for i := range s.Members {
		s.Members[i].Image, s.Members[i].Version = target, "2.4.1"
	}
	s.Object.Status.Upgrade = &baov1.UpgradeStatus{ID: "u2", Kind: baov1.OperationVersion, Strategy: baov1.RollingUpdateStrategy,
		FromVersion: "2.4.0", TargetVersion: "2.4.1", TargetImage: target, StartedAt: &metav1.Time{Time: s.Now.Add(-time.Minute)},
		Plan: &baov1.UpgradePlan{Pods: []string{"bao-1", "bao-2", "bao-0"}}, CompletedPods: []string{"bao-1", "bao-2", "bao-0"},
		Stats: &baov1.OperationStats{FirstTerm: 4, LastTerm: 5}}
	s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}
	for range 3 {
		if pass(s).Kind == operation.KindComplete {
			break
		}
	}
	g.Expect(s.Object.Status.Upgrade).To(BeNil())
	g.Expect(s.Object.Status.History).To(HaveLen(2))
	e := s.Object.Status.History[0]
	g.Expect(e.Outcome).To(Equal(baov1.OutcomeSucceeded))
	g.Expect(e.ID).To(Equal("u2"))
	g.Expect(e.Elections).To(Equal(int32(1)))
	g.Expect(e.EndedAt.Time).To(BeTemporally("==", s.Now))
}

// The baokeeper.dev/pause annotation holds a rolling upgrade between members as
// spec.upgrade.paused does, and says which pauses it; the condition says so too.
func TestPauseAnnotationHolds(t *testing.T) {
	g := NewWithT(t)
	s := restingSnapshot()
	s.Object.Annotations = map[string]string{baov1.AnnotationPause: "true"}
	s.Object.Spec.Version = "2.4.1"
	target := upgrade.DefaultImage("2.4.1")
	s.StatefulSet.Spec.Template.Spec.Containers[0].Image = target
	s.Members[1].Image, s.Members[1].Version = target, "2.4.1"
	s.Object.Status.Upgrade = &baov1.UpgradeStatus{ID: "u1", Kind: baov1.OperationVersion, Strategy: baov1.RollingUpdateStrategy,
		FromVersion: "2.4.0", TargetVersion: "2.4.1", TargetImage: target, StartedAt: &metav1.Time{Time: s.Now.Add(-time.Minute)},
		Plan: &baov1.UpgradePlan{Pods: []string{"bao-1", "bao-2", "bao-0"}}, CompletedPods: []string{"bao-1"}}
	s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}
	p := pass(s)
	g.Expect(p.Kind).To(Equal(operation.KindHold))
	g.Expect(p.RequeueAfter).To(BeZero(), "a person's pause looks again at the usual pace")
	g.Expect(s.Object.Status.Upgrade.WaitingFor).To(HavePrefix("paused by the baokeeper.dev/pause annotation before bao-2"))

	c := s.Object.DeepCopy()
	setConditions(c, s.Now)
	cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionUpgradePaused))
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal(string(baov1.ReasonPausedByAnnotation)))

	s.Object.Annotations[baov1.AnnotationPause] = "false"
	g.Expect(pass(s).Kind).NotTo(Equal(operation.KindHold), "another value pauses nothing")
}
