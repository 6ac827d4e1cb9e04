package history

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

func running(step *baov1.UpgradeStep) *baov1.OpenBaoClusterStatus {
	return &baov1.OpenBaoClusterStatus{Upgrade: &baov1.UpgradeStatus{
		ID: "up-1", Kind: baov1.OperationVersion, Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
		StartedAt: at(-10 * time.Minute), CurrentStep: step,
	}}
}

func TestObserve(t *testing.T) {
	g := NewWithT(t)
	st := running(nil)
	Observe(st, 0)
	g.Expect(st.Upgrade.Stats).To(BeNil(), "a term that was not read is not seen")
	for _, term := range []uint64{7, 7, 9, 8} {
		Observe(st, term)
	}
	g.Expect(*st.Upgrade.Stats).To(Equal(baov1.OperationStats{FirstTerm: 7, LastTerm: 9}))
	g.Expect(Upgrade(st.Upgrade, nil, baov1.OutcomeSucceeded, "", "", t0).Elections).To(Equal(int32(2)))
}

func TestTrack(t *testing.T) {
	replace := func(pod string, started time.Duration) *baov1.UpgradeStep {
		return &baov1.UpgradeStep{Action: baov1.StepReplaceMember, Pod: pod, StartedAt: at(started)}
	}
	cases := []struct {
		name        string
		before      *baov1.OpenBaoClusterStatus
		after       *baov1.OpenBaoClusterStatus
		wantLongest *baov1.StepRecord
		wantEntries []baov1.Outcome
	}{
		{name: "a step in progress counts nothing yet",
			before: running(replace("bao-0", -time.Minute)), after: running(replace("bao-0", -time.Minute))},
		{name: "a step-down then the replacement of the same member is one step",
			before: running(&baov1.UpgradeStep{Action: baov1.StepTransferLeadership, Pod: "bao-0", StartedAt: at(-time.Minute)}),
			after:  running(&baov1.UpgradeStep{Action: baov1.StepReplaceMember, Pod: "bao-0", StartedAt: at(-time.Minute)})},
		{name: "a step that ended counts, from its start to now",
			before: running(replace("bao-0", -42*time.Second)), after: running(nil),
			wantLongest: &baov1.StepRecord{Action: "ReplaceMember", Member: "bao-0", Seconds: 42}},
		{name: "the next member's step ends the previous one",
			before: running(replace("bao-0", -42*time.Second)), after: running(replace("bao-1", 0)),
			wantLongest: &baov1.StepRecord{Action: "ReplaceMember", Member: "bao-0", Seconds: 42}},
		{name: "a failure leaves a Failed entry, with the step in progress counted",
			before: running(replace("bao-0", -90*time.Second)),
			after: func() *baov1.OpenBaoClusterStatus {
				st := running(replace("bao-0", -90*time.Second))
				st.Upgrade.Failure = &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-0 did not become Ready"}
				return st
			}(),
			wantEntries: []baov1.Outcome{baov1.OutcomeFailed}},
		{name: "an offline upgrade's window is its longest step",
			before: func() *baov1.OpenBaoClusterStatus {
				st := running(nil)
				st.Upgrade.Offline = &baov1.OfflineUpgradeStatus{StoppedAt: at(-8 * time.Second)}
				return st
			}(),
			after: func() *baov1.OpenBaoClusterStatus {
				st := running(nil)
				st.Upgrade.Offline = &baov1.OfflineUpgradeStatus{StoppedAt: at(-8 * time.Second), ServingAt: at(0)}
				return st
			}(),
			wantLongest: &baov1.StepRecord{Action: StepOfflineWindow, Seconds: 8}},
		{name: "a blue-green step counts",
			before: func() *baov1.OpenBaoClusterStatus {
				st := running(nil)
				st.BlueGreen = &baov1.BlueGreenStatus{CurrentStep: &baov1.UpgradeStep{Action: baov1.StepPromoteMember, Pod: "bao-g-0", StartedAt: at(-3 * time.Second)}}
				return st
			}(),
			after: func() *baov1.OpenBaoClusterStatus {
				st := running(nil)
				st.BlueGreen = &baov1.BlueGreenStatus{}
				return st
			}(),
			wantLongest: &baov1.StepRecord{Action: "PromoteMember", Member: "bao-g-0", Seconds: 3}},
		{name: "a scaling's failure",
			before: &baov1.OpenBaoClusterStatus{Scaling: &baov1.ScalingStatus{ID: "s-1", FromReplicas: 3, TargetReplicas: 5}},
			after: &baov1.OpenBaoClusterStatus{Scaling: &baov1.ScalingStatus{ID: "s-1", FromReplicas: 3, TargetReplicas: 5,
				Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout}}},
			wantEntries: []baov1.Outcome{baov1.OutcomeFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			Track(tc.before, tc.after, 10, t0)
			var got []baov1.Outcome
			for _, e := range tc.after.History {
				got = append(got, e.Outcome)
			}
			g.Expect(got).To(Equal(tc.wantEntries))
			if up := tc.after.Upgrade; up != nil && tc.wantLongest != nil {
				g.Expect(up.Stats).NotTo(BeNil())
				g.Expect(up.Stats.LongestStep).To(Equal(tc.wantLongest))
			}
			if tc.wantLongest == nil && tc.after.Upgrade != nil && tc.after.Upgrade.Stats != nil {
				g.Expect(tc.after.Upgrade.Stats.LongestStep).To(BeNil())
			}
			// Again on the same two statuses: nothing more.
			n := len(tc.after.History)
			Track(tc.before, tc.after, 10, t0)
			g.Expect(tc.after.History).To(HaveLen(n))
		})
	}
}

func TestFailedEntry(t *testing.T) {
	g := NewWithT(t)
	before := running(&baov1.UpgradeStep{Action: baov1.StepReplaceMember, Pod: "bao-0", StartedAt: at(-90 * time.Second)})
	after := before.DeepCopy()
	after.Upgrade.Failure = &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-0 did not become Ready"}
	Track(before, after, 10, t0)
	g.Expect(after.History).To(HaveLen(1))
	e := after.History[0]
	g.Expect(e.Kind).To(Equal(baov1.HistoryVersion))
	g.Expect(e.Reason).To(Equal(string(baov1.FailureStepTimeout)))
	g.Expect(e.Message).To(Equal("bao-0 did not become Ready"))
	g.Expect(e.LongestStep).To(Equal(&baov1.StepRecord{Action: "ReplaceMember", Member: "bao-0", Seconds: 90}))
	g.Expect(e.EndedAt.Time).To(BeTemporally("==", t0))
	g.Expect(Duration(e)).To(Equal(10 * time.Minute))
	g.Expect(after.Upgrade.Stats).To(BeNil(), "the stats of the running upgrade are not changed by its entry")
}

func TestEnd(t *testing.T) {
	g := NewWithT(t)
	st := running(&baov1.UpgradeStep{Action: baov1.StepShutdownLeader, Pod: "bao-2", StartedAt: at(-7 * time.Second)})
	st.Upgrade.Stats = &baov1.OperationStats{FirstTerm: 3, LastTerm: 4, LongestStep: &baov1.StepRecord{Action: "ReplaceMember", Member: "bao-0", Seconds: 5}}
	st.Upgrade.Snapshot = &baov1.SnapshotReceipt{Location: "s3://b/k", SHA256: "abc"}
	st.History = []baov1.HistoryEntry{{Kind: baov1.HistoryScaling, Outcome: baov1.OutcomeSucceeded}}
	End(st, baov1.OutcomeSucceeded, "", "Every member runs 2.4.1 (from 2.4.0)", t0)
	g.Expect(st.History).To(HaveLen(2))
	e := st.History[0]
	g.Expect(e.Outcome).To(Equal(baov1.OutcomeSucceeded))
	g.Expect(e.Elections).To(Equal(int32(1)))
	g.Expect(e.LongestStep).To(Equal(&baov1.StepRecord{Action: "ShutdownLeader", Member: "bao-2", Seconds: 7}), "the step in progress ends with it")
	g.Expect(e.Snapshot.Location).To(Equal("s3://b/k"))
	g.Expect(Summary(e)).To(Equal("Version 2.4.0 → 2.4.1: Succeeded"))

	// The same end decided again (a pass whose write was lost and redone) is one entry.
	End(st, baov1.OutcomeSucceeded, "", "Every member runs 2.4.1 (from 2.4.0)", t0)
	g.Expect(st.History).To(HaveLen(2))

	// A rollout is recorded as rolling, with what changed.
	ro := &baov1.OpenBaoClusterStatus{Upgrade: &baov1.UpgradeStatus{ID: "ro", Kind: baov1.OperationRollout, FromVersion: "2.4.1", TargetVersion: "2.4.1", Changes: "new configuration"}}
	End(ro, baov1.OutcomeCancelled, "SpecChanged", "spec changed back", t0)
	g.Expect(ro.History[0].Strategy).To(Equal(baov1.RollingUpdateStrategy))
	g.Expect(Summary(ro.History[0])).To(Equal("Rollout on 2.4.1 (new configuration): Cancelled"))
}

func TestLimitAndClip(t *testing.T) {
	g := NewWithT(t)
	st := &baov1.OpenBaoClusterStatus{}
	for i := range 5 {
		Add(st, baov1.HistoryEntry{ID: string(rune('a' + i)), Kind: baov1.HistoryScaling, Outcome: baov1.OutcomeSucceeded, EndedAt: at(time.Duration(i) * time.Minute)}, 3)
	}
	g.Expect(st.History).To(HaveLen(3))
	g.Expect(st.History[0].ID).To(Equal("e"), "newest first")
	Track(st, st, 2, t0)
	g.Expect(st.History).To(HaveLen(2), "a smaller spec.historyLimit cuts at the next pass")

	long := strings.Repeat("é", 600) // 1200 bytes
	g.Expect(len(clip(long))).To(BeNumerically("<=", 1024))
	g.Expect(clip(long)).To(HaveSuffix("..."))
	g.Expect(strings.ToValidUTF8(clip(long), "?")).To(Equal(clip(long)), "cut on a rune boundary")
}
