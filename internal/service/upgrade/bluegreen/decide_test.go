package bluegreen

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// advance runs passes until the status reaches phase (never failing), for tables
// that start from a phase.
func advance(t *testing.T, w *world, phase baov1.BlueGreenPhase) {
	t.Helper()
	for range 500 {
		if w.status != nil && w.status.Phase == phase {
			return
		}
		if d := w.pass(false); d.Kind == operation.KindFail || d.Kind == operation.KindHold {
			t.Fatalf("stopped before %s: %s %s", phase, d.Kind, d.WaitingFor)
		}
	}
	t.Fatalf("never reached %s", phase)
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name  string
		phase baov1.BlueGreenPhase
		// setup changes the world or the input before the decision.
		setup func(w *world, in *Input)
		want  operation.Kind
		// check inspects the decision.
		check func(g Gomega, d Decision)
	}{
		{
			name: "start records blue from the running pods, not the spec",
			setup: func(w *world, in *Input) {
				for i := range in.Cluster.Members {
					in.Cluster.Members[i].Image = "mirror.example/openbao:2.4.0"
				}
			},
			want: operation.KindPersist,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Status.Phase).To(Equal(baov1.BlueGreenDeployGreen))
				g.Expect(d.Status.Blue).To(Equal(baov1.MemberSet{StatefulSet: "bao", Revision: "bao-abc", Image: "mirror.example/openbao:2.4.0", Version: "2.4.0", Replicas: 3}))
				g.Expect(d.Status.Green).To(Equal(baov1.MemberSet{StatefulSet: "bao-1a2b3c4d", Image: "openbao/openbao:2.4.1", Version: "2.4.1", Replicas: 3}))
			},
		},
		{
			name:  "paused before the start holds and creates nothing",
			setup: func(w *world, in *Input) { in.Paused = true },
			want:  operation.KindHold,
			check: func(g Gomega, d Decision) { g.Expect(d.WaitingFor).To(ContainSubstring("spec.upgrade.paused")) },
		},
		{
			name:  "green is created once the intent is recorded",
			phase: baov1.BlueGreenDeployGreen,
			want:  operation.KindApply,
			check: func(g Gomega, d Decision) { g.Expect(d.Object).To(Equal(operation.ObjectGreenStatefulSet)) },
		},
		{
			name:  "a green member that autopilot promoted before green was synced is demoted back, and the sync counts anew",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) {
				in.Cluster.Green[1].Voter = true
				in.Status.SyncedSince = &metav1.Time{Time: in.Cluster.Now.Add(-time.Second)}
			},
			want: operation.KindPersist,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Status.CurrentStep).To(HaveField("Action", StepDemote))
				g.Expect(d.Status.CurrentStep).To(HaveField("Pod", "bao-1a2b3c4d-1"))
				g.Expect(d.Status.SyncedSince).To(BeNil())
				g.Expect(d.Event).To(ContainSubstring("permanent non-voter list"))
			},
		},
		{
			name:  "a green member that leads before green was promoted fails the upgrade",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) { in.Cluster.Green[1].Voter = true; in.Cluster.Leader = "bao-1a2b3c4d-1" },
			want:  operation.KindFail,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Reason).To(Equal(ReasonGreenVotedEarly))
				g.Expect(d.Member).To(Equal("bao-1a2b3c4d-1"))
			},
		},
		{
			name:  "a green member behind the leader holds the sync",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) { in.Cluster.Green[2].LastIndex = 50 },
			want:  operation.KindWait,
			check: func(g Gomega, d Decision) {
				g.Expect(d.WaitingFor).To(ContainSubstring("bao-1a2b3c4d-2 to catch up (index 50 behind"))
			},
		},
		{
			name:  "a break in sync counts minSyncDuration anew",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) {
				in.Status.SyncedSince = &metav1.Time{Time: in.Cluster.Now.Add(-3 * time.Second)}
				in.Cluster.Green[0].Healthy = false
			},
			want:  operation.KindPersist,
			check: func(g Gomega, d Decision) { g.Expect(d.Status.SyncedSince).To(BeNil()) },
		},
		{
			name:  "in sync for less than minSyncDuration waits for the rest",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) {
				in.Status.SyncedSince = &metav1.Time{Time: in.Cluster.Now.Add(-3 * time.Second)}
			},
			want:  operation.KindWait,
			check: func(g Gomega, d Decision) { g.Expect(d.RequeueAfter).To(Equal(2 * time.Second)) },
		},
		{
			name:  "synced long enough goes to the validation hook when one is set",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) {
				in.Status.SyncedSince = &metav1.Time{Time: in.Cluster.Now.Add(-6 * time.Second)}
				in.HasHook = true
			},
			want:  operation.KindPersist,
			check: func(g Gomega, d Decision) { g.Expect(d.Status.Phase).To(Equal(baov1.BlueGreenValidate)) },
		},
		{
			name:  "a failed validation hook holds with the Job's name and how to read its logs",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) {
				in.Status.Phase = baov1.BlueGreenValidate
				in.Status.CurrentStep = &baov1.UpgradeStep{Action: StepValidate, Attempts: 1, MaxAttempts: 1}
				in.StepJob = operation.Job{Phase: operation.JobFailed, Message: "exit code 3"}
				in.StepJobName = "bao-validate-1a2b3c4d-1"
			},
			want: operation.KindFail,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Reason).To(Equal(ReasonValidationFailed))
				g.Expect(d.Message).To(ContainSubstring("kubectl logs -n ns job/bao-validate-1a2b3c4d-1"))
				g.Expect(d.Message).To(ContainSubstring("exit code 3"))
			},
		},
		{
			name:  "without autoPromote the hold is announced once with the command that releases it",
			phase: baov1.BlueGreenAwaitPromotion,
			setup: func(w *world, in *Input) { in.AutoPromote = false; in.Status.Promotion = baov1.PromotionPending },
			want:  operation.KindPersist,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Status.Promotion).To(Equal(baov1.PromotionWaiting))
				g.Expect(d.Event).To(ContainSubstring("kubectl annotate openbaocluster bao -n ns baokeeper.dev/promote="))
			},
		},
		{
			name:  "waiting for promotion holds",
			phase: baov1.BlueGreenAwaitPromotion,
			setup: func(w *world, in *Input) { in.AutoPromote = false; in.Status.Promotion = baov1.PromotionWaiting },
			want:  operation.KindHold,
		},
		{
			name:  "a promote request releases the hold",
			phase: baov1.BlueGreenAwaitPromotion,
			setup: func(w *world, in *Input) { in.AutoPromote = false; in.Status.Promotion = baov1.PromotionRequested },
			want:  operation.KindPersist,
			check: func(g Gomega, d Decision) { g.Expect(d.Status.Phase).To(Equal(baov1.BlueGreenPromoteGreen)) },
		},
		{
			name:  "a promotion waits while a voter is unhealthy",
			phase: baov1.BlueGreenPromoteGreen,
			setup: func(w *world, in *Input) { in.Cluster.Members[2].Healthy = false },
			want:  operation.KindWait,
			check: func(g Gomega, d Decision) { g.Expect(d.WaitingFor).To(ContainSubstring("not healthy: bao-2")) },
		},
		{
			name:  "a promotion waits for a trustworthy autopilot read",
			phase: baov1.BlueGreenPromoteGreen,
			setup: func(w *world, in *Input) { in.Cluster.AutopilotKnown = false },
			want:  operation.KindWait,
		},
		{
			name:  "spec.upgrade.paused holds between two steps",
			phase: baov1.BlueGreenPromoteGreen,
			setup: func(w *world, in *Input) { in.Paused = true },
			want:  operation.KindHold,
		},
		{
			name:  "a demotion never targets the leader",
			phase: baov1.BlueGreenDemoteBlue,
			setup: func(w *world, in *Input) {
				in.Status.CurrentStep = &baov1.UpgradeStep{Action: StepDemote, Pod: "bao-1", Attempts: 1}
				in.Cluster.Leader = "bao-1"
			},
			want: operation.KindPersist,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Status.CurrentStep).To(BeNil())
				g.Expect(d.WaitingFor).To(ContainSubstring("stepped down instead"))
			},
		},
		{
			name:  "a step-down waits while another blue member votes",
			phase: baov1.BlueGreenTransferLeadership,
			setup: func(w *world, in *Input) { in.Cluster.Members[1].Voter = true },
			want:  operation.KindPersist,
			check: func(g Gomega, d Decision) { g.Expect(d.Status.Phase).To(Equal(baov1.BlueGreenDemoteBlue)) },
		},
		{
			name:  "a failed step-down is tried again only after OpenBao's cooldown",
			phase: baov1.BlueGreenTransferLeadership,
			setup: func(w *world, in *Input) {
				in.Status.CurrentStep = &baov1.UpgradeStep{Action: StepStepDown, Pod: "bao-0", Attempts: 1, MaxAttempts: 3}
				in.StepJob = operation.Job{Phase: operation.JobFailed, FinishedAt: in.Cluster.Now.Add(-4 * time.Second), Message: "timeout"}
			},
			want:  operation.KindWait,
			check: func(g Gomega, d Decision) { g.Expect(d.RequeueAfter).To(Equal(6 * time.Second)) },
		},
		{
			name:  "a green leader on the target is the point of no return, recorded with the serving StatefulSet",
			phase: baov1.BlueGreenTransferLeadership,
			setup: func(w *world, in *Input) { in.Cluster.Leader = "bao-1a2b3c4d-2" },
			want:  operation.KindPersist,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Status.Phase).To(Equal(baov1.BlueGreenCutover))
				g.Expect(d.Status.LeaderMovedAt).NotTo(BeNil())
				g.Expect(d.Serving).To(Equal("bao-1a2b3c4d"))
			},
		},
		{
			name:  "a green leader that does not report the target fails",
			phase: baov1.BlueGreenTransferLeadership,
			setup: func(w *world, in *Input) { in.Cluster.Leader = "bao-1a2b3c4d-2"; in.Cluster.Green[2].Version = "2.4.0" },
			want:  operation.KindFail,
			check: func(g Gomega, d Decision) { g.Expect(d.Reason).To(Equal(ReasonWrongLeader)) },
		},
		{
			name:  "a phase that waits longer than phaseTimeout fails, naming what it waited for",
			phase: baov1.BlueGreenSync,
			setup: func(w *world, in *Input) {
				in.Status.PhaseStartedAt = &metav1.Time{Time: in.Cluster.Now.Add(-11 * time.Minute)}
				in.Cluster.Green[1].Healthy = false
			},
			want: operation.KindFail,
			check: func(g Gomega, d Decision) {
				g.Expect(d.Reason).To(Equal(ReasonPhaseTimeout))
				g.Expect(d.Message).To(ContainSubstring("bao-1a2b3c4d-1 healthy"))
			},
		},
		{
			name:  "cleanup deletes blue's StatefulSet first",
			phase: baov1.BlueGreenCleanup,
			want:  operation.KindDelete,
			check: func(g Gomega, d Decision) { g.Expect(d.Object).To(Equal(operation.ObjectBlueStatefulSet)) },
		},
		{
			name:  "cleanup deletes blue's volumes once its StatefulSet is gone, without waiting for its pods",
			phase: baov1.BlueGreenCleanup,
			setup: func(w *world, in *Input) { in.BlueExists = false },
			want:  operation.KindDelete,
			check: func(g Gomega, d Decision) { g.Expect(d.Object).To(Equal(operation.ObjectBlueVolumes)) },
		},
		{
			name:  "a failed upgrade waits for a retry",
			phase: baov1.BlueGreenPromoteGreen,
			setup: func(w *world, in *Input) {
				in.Upgrade = &baov1.UpgradeStatus{Failure: &baov1.UpgradeFailure{Reason: "PromoteFailed"}}
			},
			want:  operation.KindWait,
			check: func(g Gomega, d Decision) { g.Expect(d.WaitingFor).To(ContainSubstring("baokeeper.dev/retry")) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, 3, 0)
			if tc.phase != "" {
				advance(t, w, tc.phase)
			}
			in := w.input()
			before := in.Status.DeepCopy()
			if tc.setup != nil {
				tc.setup(w, &in)
			}
			if in.Status != nil {
				before = in.Status.DeepCopy()
			}
			d := Decide(in)
			g.Expect(d.Kind).To(Equal(tc.want), "decision: %+v", d.Action)
			g.Expect(in.Status).To(Equal(before), "Decide must not change its input")
			if tc.check != nil {
				tc.check(g, d)
			}
		})
	}
}

func TestAcceptsPromote(t *testing.T) {
	cases := []struct {
		name string
		st   *baov1.BlueGreenStatus
		want bool
	}{
		{"no blue-green upgrade", nil, false},
		{"before the hold", &baov1.BlueGreenStatus{Phase: baov1.BlueGreenSync, Promotion: baov1.PromotionPending}, false},
		{"hold reached, not yet announced", &baov1.BlueGreenStatus{Phase: baov1.BlueGreenAwaitPromotion, Promotion: baov1.PromotionPending}, false},
		{"waiting", &baov1.BlueGreenStatus{Phase: baov1.BlueGreenAwaitPromotion, Promotion: baov1.PromotionWaiting}, true},
		{"already released", &baov1.BlueGreenStatus{Phase: baov1.BlueGreenAwaitPromotion, Promotion: baov1.PromotionRequested}, false},
		{"released automatically", &baov1.BlueGreenStatus{Phase: baov1.BlueGreenPromoteGreen, Promotion: baov1.PromotionAutomatic}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { NewWithT(t).Expect(AcceptsPromote(tc.st)).To(Equal(tc.want)) })
	}
}

func TestRetry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name            string
		step            *baov1.UpgradeStep
		wantMaxAttempts int32
	}{
		{"a failed validation hook runs once more", &baov1.UpgradeStep{Action: StepValidate, Attempts: 2, MaxAttempts: 2}, 3},
		{"a failed executor step gets the default attempts more", &baov1.UpgradeStep{Action: StepPromote, Pod: "g-0", Attempts: 3, MaxAttempts: 3}, 3 + operation.DefaultMaxJobAttempts},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			st := &baov1.BlueGreenStatus{Phase: baov1.BlueGreenPromoteGreen, CurrentStep: tc.step,
				PhaseStartedAt: &metav1.Time{Time: now.Add(-time.Hour)}}
			Retry(st, now)
			g.Expect(st.CurrentStep.MaxAttempts).To(Equal(tc.wantMaxAttempts))
			g.Expect(st.CurrentStep.Attempts).To(Equal(tc.step.Attempts), "attempts go on counting: Job names carry them")
			g.Expect(st.CurrentStep.StartedAt.Time).To(Equal(now))
			g.Expect(st.PhaseStartedAt.Time).To(Equal(now), "phaseTimeout counts from the retry")
		})
	}
	g := NewWithT(t)
	st := &baov1.BlueGreenStatus{Phase: baov1.BlueGreenSync}
	Retry(st, now)
	g.Expect(st.PhaseStartedAt.Time).To(Equal(now), "a phase without a step restarts its clock too")
}

func TestUnknownPhaseSaysWhatToDo(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, 3, 0)
	advance(t, w, baov1.BlueGreenSync)
	in := w.input()
	in.Status.Phase = "Teleport"
	d := Decide(in)
	g.Expect(d.Kind).To(Equal(operation.KindFail))
	g.Expect(d.Reason).To(Equal(ReasonUnknownPhase))
	g.Expect(d.Message).To(ContainSubstring("run the release that started it"))
}
