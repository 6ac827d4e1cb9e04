package snapshot

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const wantLoc = "s3://snaps/bao/ns/bao/2.4.0-to-2.4.1-20261129T115000Z-1.snap"

func spec(p baov1.SnapshotPolicy) baov1.PreUpgradeSnapshotSpec {
	s := baov1.PreUpgradeSnapshotSpec{Policy: p, S3: &baov1.S3Target{Endpoint: "http://127.0.0.1:1", Bucket: "snaps", Prefix: "bao"}}
	if p == baov1.SnapshotIfOlderThan {
		s.MaxAge = baov1.DurationOf(time.Hour)
	}
	return s
}

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }

func snapStep(attempts int32) *baov1.UpgradeStep {
	return &baov1.UpgradeStep{Action: StepTakeSnapshot, StartedAt: ago(time.Minute), Attempts: attempts}
}

func goodReceipt() *Receipt {
	return &Receipt{Location: wantLoc, SizeBytes: 2048, SHA256: "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12",
		RaftIndex: 812, RaftTerm: 3, FromMember: "bao-1", TakenAt: now.Add(-5 * time.Second)}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		reason     string
		in         Input
		want       Action
		wantWait   string
		wantAfter  time.Duration
		wantReason baov1.FailureReason
	}{
		{reason: "policy Never: nothing to do", in: Input{Spec: spec(baov1.SnapshotNever), Upgrade: &baov1.UpgradeStatus{}}, want: ActionDone},
		{reason: "a receipt is recorded: go on", in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{Snapshot: &baov1.SnapshotReceipt{}}}, want: ActionDone},
		{reason: "members already upgraded (policy changed mid-upgrade): never snapshot a mixed cluster",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CompletedPods: []string{"bao-2"}}}, want: ActionDone},
		{reason: "a rolling step runs: not the snapshot phase",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: &baov1.UpgradeStep{Action: "ReplaceMember", Pod: "bao-2"}}}, want: ActionDone},
		{reason: "Always: persist the intent first", in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{}, Now: now}, want: ActionBegin},
		{reason: "paused before the snapshot: hold", in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{}, Paused: true, Now: now},
			want: ActionHold, wantWait: "paused by spec.upgrade.paused before the pre-upgrade snapshot"},
		{reason: "IfOlderThan with a young receipt in the same bucket: reuse",
			in: Input{Spec: spec(baov1.SnapshotIfOlderThan), Upgrade: &baov1.UpgradeStatus{}, Now: now,
				Last: &baov1.SnapshotReceipt{Location: "s3://snaps/bao/ns/bao/old.snap", TakenAt: ago(30 * time.Minute)}},
			want: ActionReuse, wantWait: "reusing the snapshot s3://snaps/bao/ns/bao/old.snap"},
		{reason: "IfOlderThan with an old receipt: take a new one",
			in: Input{Spec: spec(baov1.SnapshotIfOlderThan), Upgrade: &baov1.UpgradeStatus{}, Now: now,
				Last: &baov1.SnapshotReceipt{Location: "s3://snaps/bao/ns/bao/old.snap", TakenAt: ago(2 * time.Hour)}},
			want: ActionBegin},
		{reason: "IfOlderThan with a young receipt in another bucket: take a new one",
			in: Input{Spec: spec(baov1.SnapshotIfOlderThan), Upgrade: &baov1.UpgradeStatus{}, Now: now,
				Last: &baov1.SnapshotReceipt{Location: "s3://elsewhere/bao/old.snap", TakenAt: ago(time.Minute)}},
			want: ActionBegin},
		{reason: "Always ignores a young receipt",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{}, Now: now,
				Last: &baov1.SnapshotReceipt{Location: "s3://snaps/bao/x.snap", TakenAt: ago(time.Minute)}},
			want: ActionBegin},
		{reason: "intent persisted, no Job yet: start attempt 1",
			in:   Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(0)}, Now: now},
			want: ActionStartJob, wantWait: "attempt 1 of 3"},
		{reason: "paused while the Job runs: the Job finishes (the pause holds at the next safe point)",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(1)}, Paused: true, Now: now,
				Job: operation.Job{Phase: operation.JobRunning}, JobName: "bao-snapshot-x-1", WantLocation: wantLoc},
			want: ActionWait, wantWait: "waiting for the pre-upgrade snapshot Job bao-snapshot-x-1"},
		{reason: "the Job succeeded with a good receipt: record it",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(1), FromVersion: "2.4.0"}, Now: now,
				Job: operation.Job{Phase: operation.JobSucceeded, FinishedAt: now}, Receipt: goodReceipt(), WantLocation: wantLoc},
			want: ActionRecord, wantWait: "snapshot at Raft index 812 verified"},
		{reason: "the Job succeeded but its receipt names another object (a Job of another upgrade): retry after the delay",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(1)}, Now: now,
				Job: operation.Job{Phase: operation.JobSucceeded, FinishedAt: now.Add(-2 * time.Second)}, Receipt: goodReceipt(), WantLocation: "s3://snaps/other"},
			want: ActionWait, wantAfter: 8 * time.Second, wantWait: "receipt is unusable"},
		{reason: "the Job succeeded without a readable receipt: retry",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(1)}, Now: now,
				Job: operation.Job{Phase: operation.JobSucceeded, FinishedAt: now.Add(-time.Minute)}, ReceiptErr: errors.New("the Job's termination message is empty"), WantLocation: wantLoc},
			want: ActionStartJob, wantWait: "termination message is empty; starting attempt 2 of 3"},
		{reason: "the Job failed: wait out the retry delay",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(1)}, Now: now,
				Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now.Add(-3 * time.Second), Message: "SignatureDoesNotMatch"}, JobName: "j1"},
			want: ActionWait, wantAfter: 7 * time.Second, wantWait: "Job j1 failed: SignatureDoesNotMatch"},
		{reason: "the last attempt failed: fail before any member is touched",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(3)}, Now: now,
				Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now.Add(-time.Minute), Message: "bucket does not exist"}, JobName: "j3"},
			want: ActionFail, wantReason: ReasonSnapshotFailed, wantWait: "failed after 3 attempts, last: Job j3 failed: bucket does not exist; no member was touched"},
		{reason: "a retry granted more attempts: start attempt 4",
			in: Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: &baov1.UpgradeStep{Action: StepTakeSnapshot, Attempts: 3, MaxAttempts: 6}}, Now: now,
				Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now.Add(-time.Minute)}},
			want: ActionStartJob, wantWait: "starting attempt 4 of 6"},
		{reason: "failed: wait for a person",
			in:   Input{Spec: spec(baov1.SnapshotAlways), Upgrade: &baov1.UpgradeStatus{CurrentStep: snapStep(3), Failure: &baov1.UpgradeFailure{Reason: ReasonSnapshotFailed}}, Now: now},
			want: ActionWait, wantWait: "baokeeper.dev/retry"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			d := Decide(tt.in)
			g.Expect(d.Action).To(Equal(tt.want), tt.reason)
			g.Expect(d.WaitingFor).To(ContainSubstring(tt.wantWait), tt.reason)
			g.Expect(d.RequeueAfter).To(Equal(tt.wantAfter), tt.reason)
			g.Expect(d.Reason).To(Equal(tt.wantReason), tt.reason)
		})
	}
}

func TestRecord(t *testing.T) {
	g := NewWithT(t)
	st := &baov1.OpenBaoClusterStatus{Upgrade: &baov1.UpgradeStatus{FromVersion: "2.4.0"}}
	in := func() Input {
		return Input{Spec: spec(baov1.SnapshotAlways), Upgrade: st.Upgrade, Last: st.LastSnapshot, Now: now, WantLocation: wantLoc}
	}

	d := Decide(in())
	Record(st, d, now)
	g.Expect(st.Upgrade.CurrentStep).To(HaveField("Action", StepTakeSnapshot))
	g.Expect(st.Upgrade.CurrentStep.StartedAt.Time).To(Equal(now))

	d = Decide(in())
	g.Expect(d.Action).To(Equal(ActionStartJob))
	Record(st, d, now)
	g.Expect(st.Upgrade.CurrentStep.Attempts).To(BeEquivalentTo(1), "the attempt is counted before its Job is created")
	g.Expect(Decide(in()).Action).To(Equal(ActionStartJob), "Decide alone never moves on: the Job (same name) is created again, idempotently")

	i := in()
	i.Job, i.Receipt = operation.Job{Phase: operation.JobSucceeded, FinishedAt: now}, goodReceipt()
	d = Decide(i)
	Record(st, d, now)
	g.Expect(st.Upgrade.CurrentStep).To(BeNil(), "the rolling machine starts from an empty step")
	g.Expect(st.Upgrade.Snapshot).To(Equal(&baov1.SnapshotReceipt{Location: wantLoc, TakenAt: ptrTime(now.Add(-5 * time.Second)), SizeBytes: 2048,
		SHA256: goodReceipt().SHA256, RaftIndex: 812, FromMember: "bao-1", Version: "2.4.0", Trigger: baov1.SnapshotPreUpgrade}))
	g.Expect(st.LastSnapshot).To(Equal(st.Upgrade.Snapshot), "the cluster remembers it for IfOlderThan, in the same write")
	g.Expect(st.Snapshots.Taken).To(HaveExactElements(*st.Upgrade.Snapshot), "and keeps its receipt with the others")
	g.Expect(Decide(in()).Action).To(Equal(ActionDone))
}

func TestParseReceipt(t *testing.T) {
	tests := []struct {
		reason, msg, wantErr string
	}{
		{reason: "a complete receipt", msg: `{"location":"s3://b/k","sizeBytes":10,"sha256":"` + goodReceipt().SHA256 + `","takenAt":"2026-11-29T12:00:00Z"}`},
		{reason: "empty (a Job that died before writing)", msg: " \n", wantErr: "termination message is empty"},
		{reason: "log lines (FallbackToLogsOnError)", msg: "panic: boom", wantErr: "not a receipt"},
		{reason: "fields missing", msg: `{"location":"b/k","sizeBytes":0}`, wantErr: "lacks location, sizeBytes, sha256, takenAt"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ParseReceipt(tt.msg)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
