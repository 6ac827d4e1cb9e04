package offline

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const (
	oldImage = "ghcr.io/openbao/openbao:2.5.0"
	newImage = "ghcr.io/openbao/openbao:2.6.0"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// world is a three-member cluster on 2.5.0 upgrading offline to 2.6.0: every member
// a Ready, healthy voter on oldImage, bao-0 leading at committed index 500, the pod
// template on newImage and seen by the StatefulSet controller.
type world struct {
	c   *baov1.OpenBaoCluster
	obs *operation.Cluster
}

func newWorld(mut ...func(*world)) *world {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns"}}
	c.Spec.Version = "2.6.0"
	c.Spec.Upgrade.Strategy = baov1.OfflineStrategy
	c.Status.CurrentVersion = "2.5.0"
	c.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.OfflineStrategy, FromVersion: "2.5.0", TargetVersion: "2.6.0", TargetImage: newImage,
		Plan: &baov1.UpgradePlan{Pods: []string{"bao-0", "bao-1", "bao-2"}}}
	c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationOfflineUpgrade, Holder: operation.HolderUpgradeManager}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "bao", Generation: 2}}
	sts.Status.ObservedGeneration = 2
	sts.Spec.Template.Spec.Containers = []corev1.Container{{Name: workload.ContainerName, Image: newImage}}
	obs := &operation.Cluster{Now: t0, Leader: "bao-0", AutopilotKnown: true, AutopilotHealthy: true, LeaderIndex: 500, LeaderCommitted: 500, StatefulSet: sts}
	for i := range 3 {
		obs.Members = append(obs.Members, operation.Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, PodExists: true, PodReady: true, Image: oldImage,
			Initialized: true, Version: "2.5.0", InRaft: true, Voter: true, Healthy: true})
	}
	w := &world{c: c, obs: obs}
	for _, m := range mut {
		m(w)
	}
	return w
}

// stopped records the stop at t0 with committed index 500.
func stopped(w *world) {
	t := metav1.NewTime(t0)
	w.c.Status.Upgrade.Offline = &baov1.OfflineUpgradeStatus{StoppedAt: &t, LeaderBefore: "bao-0", CommittedIndex: 500}
}

// restarted is every member back on the target, bao-1 leading at index 503.
func restarted(w *world) {
	for i := range w.obs.Members {
		m := &w.obs.Members[i]
		m.Image, m.Version = newImage, "2.6.0"
	}
	w.obs.Leader, w.obs.LeaderIndex, w.obs.LeaderCommitted = "bao-1", 503, 503
}

func at(d time.Duration) func(*world) { return func(w *world) { w.obs.Now = t0.Add(d) } }

func TestDecide(t *testing.T) {
	tests := []struct {
		reason string
		w      *world

		wantKind    operation.Kind
		wantObject  operation.Object
		wantMembers []string
		wantReason  baov1.FailureReason
		wantText    string
		check       func(g Gomega, up *baov1.UpgradeStatus)
	}{
		{reason: "the pod template first, on its own: nothing restarts (OnDelete)",
			w: newWorld(func(w *world) {
				w.obs.StatefulSet.Spec.Template.Spec.Containers[0].Image = oldImage
			}),
			wantKind: operation.KindApply, wantObject: operation.ObjectPodTemplate, wantText: "nothing restarts until the stop"},
		{reason: "a template the StatefulSet controller has not seen: wait (a deleted pod would come back on the old image)",
			w:        newWorld(func(w *world) { w.obs.StatefulSet.Status.ObservedGeneration = 1 }),
			wantKind: operation.KindWait, wantText: "the StatefulSet controller to see the new pod template"},
		{reason: "a member that is not a healthy voter: wait, its volume may lack acknowledged writes",
			w:        newWorld(func(w *world) { w.obs.Members[2].Healthy = false }),
			wantKind: operation.KindWait, wantText: "bao-2 to be a Ready, healthy voter"},
		{reason: "autopilot unknown: wait",
			w:        newWorld(func(w *world) { w.obs.AutopilotKnown = false }),
			wantKind: operation.KindWait, wantText: "a trustworthy read of autopilot state"},
		{reason: "paused: hold before the stop",
			w:        newWorld(func(w *world) { w.c.Spec.Upgrade.Paused = true }),
			wantKind: operation.KindHold, wantText: "paused by spec.upgrade.paused"},
		{reason: "ready: the stop is recorded (leader, committed index) before any pod is deleted",
			w:        newWorld(),
			wantKind: operation.KindPersist, wantText: "Stopping every member of bao at once",
			check: func(g Gomega, up *baov1.UpgradeStatus) {
				g.Expect(up.Offline).NotTo(BeNil())
				g.Expect(up.Offline.StoppedAt.Time).To(Equal(t0))
				g.Expect(up.Offline.LeaderBefore).To(Equal("bao-0"))
				g.Expect(up.Offline.CommittedIndex).To(BeEquivalentTo(500))
			}},
		{reason: "stopped: every pod on the old image is deleted together, directly",
			w:        newWorld(stopped),
			wantKind: operation.KindDelete, wantObject: operation.ObjectPods, wantMembers: []string{"bao-0", "bao-1", "bao-2"}},
		{reason: "after a crash between the deletions: the pods still running are deleted again, the new ones left alone",
			w: newWorld(stopped, func(w *world) {
				w.obs.Members[0].Image, w.obs.Members[0].PodReady = newImage, false
				w.obs.Members[1].PodTerminating, w.obs.Members[2].PodExists = true, false
			}),
			wantKind: operation.KindWait, wantText: "bao-0 to start on " + newImage},
		{reason: "a pod left on the old image after the stop is deleted",
			w: newWorld(stopped, func(w *world) {
				w.obs.Members[0].Image, w.obs.Members[1].Image = newImage, newImage
			}),
			wantKind: operation.KindDelete, wantObject: operation.ObjectPods, wantMembers: []string{"bao-2"}},
		{reason: "the quorum is gone while members start: no break-glass here, wait",
			w: newWorld(stopped, func(w *world) {
				for i := range w.obs.Members {
					w.obs.Members[i].PodExists, w.obs.Members[i].PodReady = false, false
				}
				w.obs.Leader, w.obs.AutopilotKnown = "", false
			}, at(20*time.Second)),
			wantKind: operation.KindWait, wantText: "bao-0 to start on"},
		{reason: "the first leader on the target: servingAt and the window are recorded, and said",
			w:        newWorld(stopped, restarted, at(23*time.Second)),
			wantKind: operation.KindPersist, wantText: "the cluster answered no request for 23s",
			check: func(g Gomega, up *baov1.UpgradeStatus) {
				g.Expect(up.Offline.ServingAt.Time).To(Equal(t0.Add(23 * time.Second)))
				g.Expect(up.Offline.Window()).To(Equal("23s"))
			}},
		{reason: "a leader still on the old version records nothing",
			w: newWorld(stopped, restarted, func(w *world) {
				w.obs.Members[1].Version = "2.5.0"
			}, at(10*time.Second)),
			wantKind: operation.KindWait, wantText: "bao-1 to report 2.6.0",
			check: func(g Gomega, up *baov1.UpgradeStatus) { g.Expect(up.Offline.ServingAt).To(BeNil()) }},
		{reason: "serving, a member not yet a healthy voter: wait",
			w: newWorld(stopped, restarted, func(w *world) {
				t := metav1.NewTime(t0.Add(20 * time.Second))
				w.c.Status.Upgrade.Offline.ServingAt = &t
				w.obs.Members[2].Healthy, w.obs.AutopilotHealthy = false, false
			}, at(30*time.Second)),
			wantKind: operation.KindWait, wantText: "every member to be a healthy voter"},
		{reason: "serving, the committed index below the one before the stop: wait",
			w: newWorld(stopped, restarted, func(w *world) {
				t := metav1.NewTime(t0.Add(20 * time.Second))
				w.c.Status.Upgrade.Offline.ServingAt = &t
				w.obs.LeaderIndex, w.obs.LeaderCommitted = 450, 450
			}, at(30*time.Second)),
			wantKind: operation.KindWait, wantText: "committed index (450) to reach 500"},
		{reason: "every member on the target, healthy voters, the index reached: complete, with the window",
			w: newWorld(stopped, restarted, func(w *world) {
				t := metav1.NewTime(t0.Add(20 * time.Second))
				w.c.Status.Upgrade.Offline.ServingAt = &t
			}, at(30*time.Second)),
			wantKind: operation.KindComplete, wantText: "no member answered for 20s; the leader's committed index is 503 (500 before the stop)"},
		{reason: "not back within the step timeout: fails, saying how to go on and the way back",
			w: newWorld(stopped, func(w *world) {
				w.obs.Members[0].Image, w.obs.Members[0].PodReady = newImage, false
				w.obs.Members[1].PodExists, w.obs.Members[2].PodExists = false, false
			}, at(11*time.Minute)),
			wantKind: operation.KindFail, wantReason: baov1.FailureStepTimeout, wantText: "kubectl bao restore bao -n ns --into bao-back"},
		{reason: "failed: waits for a retry",
			w: newWorld(stopped, func(w *world) {
				w.c.Status.Upgrade.Failure = &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout}
			}),
			wantKind: operation.KindNone, wantText: "fix the cause, then set the baokeeper.dev/retry annotation"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			before := tt.w.c.DeepCopy()
			s := &operation.Snapshot{Cluster: tt.w.obs, Object: tt.w.c, Jobs: map[string]operation.ObservedJob{}}
			p := Operation{}.Decide(s)
			g.Expect(tt.w.c).To(Equal(before), "Decide must not change the snapshot")
			g.Expect(p.Kind).To(Equal(tt.wantKind), p.WaitingFor)
			g.Expect(p.Object).To(Equal(tt.wantObject))
			g.Expect(p.Members).To(Equal(tt.wantMembers))
			text := p.WaitingFor
			for _, ev := range p.Events {
				text += " | " + ev.Message
			}
			if tt.wantKind == operation.KindFail {
				g.Expect(p.Status.Upgrade.Failure).NotTo(BeNil())
				g.Expect(p.Status.Upgrade.Failure.Reason).To(Equal(tt.wantReason))
				text += " | " + p.Status.Upgrade.Failure.Message
			}
			if p.Status != nil && p.Status.Upgrade != nil {
				text += " | " + p.Status.Upgrade.WaitingFor
			}
			g.Expect(text).To(ContainSubstring(tt.wantText))
			if tt.wantKind == operation.KindComplete {
				g.Expect(p.Status.Upgrade).To(BeNil())
				g.Expect(p.Status.CurrentVersion).To(Equal("2.6.0"))
				g.Expect(p.Status.OperationLock).To(BeNil(), "the lock is released with the completion")
			}
			if tt.check != nil {
				g.Expect(p.Status).NotTo(BeNil())
				tt.check(g, p.Status.Upgrade)
			}
		})
	}
}

func TestStopping(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	g.Expect(Stopping(&w.c.Status)).To(BeFalse(), "before the stop the quorum watch applies")
	stopped(w)
	g.Expect(Stopping(&w.c.Status)).To(BeTrue())
	w.c.Status.Upgrade.Failure = &baov1.UpgradeFailure{}
	g.Expect(Stopping(&w.c.Status)).To(BeFalse(), "a failed offline upgrade is watched again")
	w.c.Status.Upgrade.Failure, w.c.Status.Upgrade.Strategy = nil, baov1.RollingUpdateStrategy
	g.Expect(Stopping(&w.c.Status)).To(BeFalse())
}

// The prechecks let an offline upgrade across the version boundary through, and
// ask for its snapshot.
func TestPrechecksOfOffline(t *testing.T) {
	g := NewWithT(t)
	w := newWorld()
	in := upgrade.PrecheckInput{Cluster: w.obs, Replicas: 3, Strategy: baov1.OfflineStrategy, Kind: baov1.OperationVersion, From: "2.5.0", To: "2.6.0",
		Policy: upgrade.Decision{Allowed: true}, Snapshot: baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever}}
	byName := func(pcs []baov1.Precheck) map[string]baov1.Precheck {
		out := map[string]baov1.Precheck{}
		for _, pc := range pcs {
			out[pc.Name] = pc
		}
		return out
	}
	pcs := byName(upgrade.Prechecks(in))
	g.Expect(pcs[upgrade.PrecheckCompatibility].Result).To(Equal(baov1.PrecheckPassed))
	g.Expect(pcs[upgrade.PrecheckCompatibility].Message).To(ContainSubstring("never run side by side"))
	g.Expect(pcs[upgrade.PrecheckSnapshotTarget].Result).To(Equal(baov1.PrecheckFailed))
	g.Expect(pcs[upgrade.PrecheckSnapshotTarget].Message).To(ContainSubstring("an offline upgrade needs a pre-upgrade snapshot"))

	in.Copy = true
	pcs = byName(upgrade.Prechecks(in))
	g.Expect(pcs[upgrade.PrecheckSnapshotTarget].Result).To(Equal(baov1.PrecheckPassed), "a rehearsal's copy is disposable: its offline upgrade needs no snapshot")

	in.Copy, in.Strategy, in.Snapshot.Policy = false, baov1.RollingUpdateStrategy, baov1.SnapshotNever
	pcs = byName(upgrade.Prechecks(in))
	g.Expect(pcs[upgrade.PrecheckCompatibility].Result).To(Equal(baov1.PrecheckFailed))
	g.Expect(pcs[upgrade.PrecheckCompatibility].Message).To(ContainSubstring("set spec.upgrade.strategy to Offline"))
}
