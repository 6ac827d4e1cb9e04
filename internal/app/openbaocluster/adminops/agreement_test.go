package adminops

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/cli/kubectlbao"
)

// TestOperatorAndPluginAgree runs the operator's handling of a new control value and
// kubectl bao's decision over the same table of cluster states: kubectl bao writes
// exactly what the operator acts on, and refuses the rest in the operator's words.
// (The two once kept copies of these rules, and one drifted.)
func TestOperatorAndPluginAgree(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := metav1.NewTime(now.Add(-time.Minute))
	members := func(leader string, names ...string) []baov1.MemberStatus {
		var out []baov1.MemberStatus
		for _, n := range names {
			role := baov1.RaftRoleVoter
			if n == leader {
				role = baov1.RaftRoleLeader
			}
			out = append(out, baov1.MemberStatus{Name: n, Ready: true, Healthy: true, RaftRole: role, Version: "2.4.0"})
		}
		return out
	}
	rolling := &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"}
	failed := rolling.DeepCopy()
	failed.Failure = &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Pod: "bao-2", At: &at}
	bgUpgrade := &baov1.UpgradeStatus{Strategy: baov1.BlueGreenStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1", ID: "abcd1234"}
	blueGreen := func(phase baov1.BlueGreenPhase, promotion baov1.PromotionState, led bool) *baov1.BlueGreenStatus {
		bg := &baov1.BlueGreenStatus{Phase: phase, Promotion: promotion,
			Blue:  baov1.MemberSet{StatefulSet: "bao", Replicas: 3, Version: "2.4.0"},
			Green: baov1.MemberSet{StatefulSet: "bao-abcd1234", Replicas: 3, Version: "2.4.1"}}
		if led {
			bg.LeaderMovedAt = &at
		}
		return bg
	}
	const sha = "5f2b9c1e0d3a4b6c7d8e9f00112233445566778899aabbccddeeff0011223344"
	receipts := &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: "s3://snaps/ns/bao/x.snap", SHA256: sha, Version: "2.4.0", RaftIndex: 90, TakenAt: &at}}}
	states := []struct {
		name   string
		status baov1.OpenBaoClusterStatus
		// bucket sets spec.snapshots.s3.
		bucket bool
	}{
		{name: "at rest with a bucket", bucket: true, status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Members: members("bao-0", "bao-0", "bao-1", "bao-2"),
			Snapshots: receipts}},
		{name: "snapshot running with a bucket", bucket: true, status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Members: members("bao-0", "bao-0", "bao-1", "bao-2"),
			Snapshots: receipts, OperationLock: &baov1.OperationLock{Operation: "Snapshot", Message: "taking a snapshot"}}},
		{name: "restoring in place", bucket: true, status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Members: members("bao-0", "bao-0", "bao-1", "bao-2"),
			Snapshots: receipts, OperationLock: &baov1.OperationLock{Operation: "Restore", Message: "restoring in place"},
			InPlaceRestore: &baov1.RestoreStatus{Source: "s3://snaps/ns/bao/x.snap", SHA256: sha, Step: baov1.RestoreStepRestore, ID: "abcd1234"}}},
		{name: "rehearsing on request", bucket: true, status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Members: members("bao-0", "bao-0", "bao-1", "bao-2"),
			Snapshots: receipts, OperationLock: &baov1.OperationLock{Operation: "Rehearsal", Message: "rehearsing"},
			Rehearsal: &baov1.RehearsalStatus{ID: "abcd1234", Request: "2.4.1+v0", FromVersion: "2.4.0", TargetVersion: "2.4.1", Step: baov1.RehearsalStepRestore}}},
		{name: "rolling upgrade running with a bucket", bucket: true, status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: rolling, Snapshots: receipts,
			OperationLock: &baov1.OperationLock{Operation: "RollingUpgrade", Message: "rolling upgrade from 2.4.0 to 2.4.1"}}},
		{name: "at rest", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Members: members("bao-0", "bao-0", "bao-1", "bao-2")}},
		{name: "rolling upgrade running", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: rolling,
			OperationLock: &baov1.OperationLock{Operation: "RollingUpgrade", Message: "rolling upgrade from 2.4.0 to 2.4.1"}}},
		{name: "rolling upgrade failed", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: failed}},
		{name: "scaling failed", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0",
			Scaling: &baov1.ScalingStatus{FromReplicas: 3, TargetReplicas: 5, Failure: &baov1.UpgradeFailure{Reason: baov1.FailureScalingJobFailed, Pod: "bao-3"}}}},
		{name: "rolled back", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0",
			LastRollback: &baov1.RollbackRecord{FromVersion: "2.4.0", TargetVersion: "2.4.1", At: &at}}},
		{name: "blue-green syncing", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: bgUpgrade,
			BlueGreen: blueGreen(baov1.BlueGreenSync, baov1.PromotionPending, false), Members: members("bao-0", "bao-0", "bao-1", "bao-2")}},
		{name: "blue-green waits for promotion", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: bgUpgrade,
			BlueGreen: blueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting, false), Members: members("bao-0", "bao-0", "bao-1", "bao-2")}},
		{name: "green has led", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Upgrade: bgUpgrade,
			BlueGreen: blueGreen(baov1.BlueGreenCutover, baov1.PromotionRequested, true), Members: members("bao-abcd1234-0", "bao-abcd1234-0")}},
		{name: "break-glass", status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0",
			BreakGlass: &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost, Nonce: "n0nce"}}},
	}
	controls := []struct {
		control    kubectlbao.Control
		annotation string
		value      string
	}{
		{kubectlbao.ControlPromote, baov1.AnnotationPromote, "v1"},
		{kubectlbao.ControlRollback, baov1.AnnotationRollback, "v1"},
		{kubectlbao.ControlRetry, baov1.AnnotationRetry, "v1"},
		{kubectlbao.ControlRestart, baov1.AnnotationRestart, "v1"},
		{kubectlbao.ControlSnapshot, baov1.AnnotationSnapshot, "v1"},
		{kubectlbao.ControlRestore, baov1.AnnotationRestore, sha + "-v1"},
		{kubectlbao.ControlRehearse, baov1.AnnotationRehearse, "2.4.1+v1"},
		{kubectlbao.ControlRehearse, baov1.AnnotationRehearse, "2.4.0+v1"},
		{kubectlbao.ControlRehearse, baov1.AnnotationRehearse, "2.6.0+v1"},
		{kubectlbao.ControlBreakGlassAck, baov1.AnnotationBreakGlassAck, "n0nce"},
		{kubectlbao.ControlBreakGlassAck, baov1.AnnotationBreakGlassAck, "wrong"},
	}
	accepted := 0
	for _, st := range states {
		for _, ctl := range controls {
			t.Run(st.name+"/"+string(ctl.control)+"="+ctl.value, func(t *testing.T) {
				g := NewWithT(t)
				c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns"},
					Spec: baov1.OpenBaoClusterSpec{Version: "2.4.1"}, Status: *st.status.DeepCopy()}
				if st.bucket {
					c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps"}
				}

				in := kubectlbao.DecideInput{Control: ctl.control, Nonce: ctl.value, Now: now}
				switch ctl.control {
				case kubectlbao.ControlRestore:
					in.SHA256 = sha
				case kubectlbao.ControlRehearse:
					in.To = ctl.value
				}
				plugin := kubectlbao.Decide(c.DeepCopy(), in)

				rec := events.NewFakeRecorder(10)
				r := &Reconciler{Recorder: rec}
				c.Annotations = map[string]string{ctl.annotation: ctl.value}
				r.handleRequests(c, kubectlbao.Observation(c, now))
				var got []string
				for len(rec.Events) > 0 {
					got = append(got, <-rec.Events)
				}
				g.Expect(got).NotTo(BeEmpty(), "the operator answers every new value with an event")
				refusal := ""
				for _, e := range got {
					if strings.HasPrefix(e, "Warning ") && strings.Contains(e, "Refused ") {
						refusal = e
					}
				}
				operatorActs := refusal == ""
				g.Expect(plugin.Write).To(Equal(operatorActs), "kubectl bao writes exactly what the operator acts on; operator said %v, plugin said %q", got, plugin.Why)
				if !operatorActs {
					g.Expect(plugin.Why).NotTo(BeEmpty())
					// The plugin's reason is the operator's, which its event carries.
					// (kubectl bao may lead in with words of its own before it.)
					first, _, _ := strings.Cut(strings.TrimPrefix(plugin.Why, "no promotion is awaited: "), ";")
					g.Expect(refusal).To(ContainSubstring(first), "the same words on both sides")
				} else {
					accepted++
				}
			})
		}
	}
	if accepted == 0 {
		t.Fatal("no request was accepted by both: the table tests only refusals")
	}
}

// The undo path the operator records when it plans an upgrade is the one kubectl
// bao plan shows for the same change.
func TestUndoPathAgrees(t *testing.T) {
	g := NewWithT(t)
	s := restingSnapshot()
	s.Object.Spec.Version = "2.4.1"
	p := startOperation{}.Decide(s)
	g.Expect(p.Status.Upgrade).NotTo(BeNil())
	plan, err := kubectlbao.BuildPlan(s.Object, kubectlbao.PlanRequest{To: "2.4.1"}, s.Now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.UndoPath).To(Equal(p.Status.Upgrade.Plan.UndoPath))
	g.Expect(plan.UndoPath).To(ContainSubstring("set spec.version back to 2.4.0"))
}
