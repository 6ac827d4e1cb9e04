package control

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// TestJudgeRefusals holds the messages docs/bad-inputs.md quotes: what the operator
// emits (event reason and message) for a request that does not fit the state.
func TestJudgeRefusals(t *testing.T) {
	idle := &baov1.OpenBaoCluster{}
	idle.Name, idle.Namespace = "bao", "ns"
	rolling := idle.DeepCopy()
	rolling.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1"}
	pastNoReturn := idle.DeepCopy()
	pastNoReturn.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1"}
	moved := metav1.Now()
	pastNoReturn.Status.BlueGreen = &baov1.BlueGreenStatus{Phase: baov1.BlueGreenCutover, LeaderMovedAt: &moved,
		Blue: baov1.MemberSet{StatefulSet: "bao", Version: "2.4.0"}, Green: baov1.MemberSet{StatefulSet: "bao-abc", Version: "2.4.1"}}
	pastNoReturn.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/bao.snap", FromMember: "bao-1", Version: "2.4.0", RaftIndex: 42}
	stepDown := pastNoReturn.DeepCopy()
	stepDown.Status.BlueGreen.Phase, stepDown.Status.BlueGreen.LeaderMovedAt = baov1.BlueGreenTransferLeadership, nil
	stepDown.Status.BlueGreen.CurrentStep = &baov1.UpgradeStep{Action: baov1.StepTransferLeadership, Pod: "bao-0"}
	tests := []struct {
		reason    string
		c         *baov1.OpenBaoCluster
		kind      upgrade.RequestKind
		value     string
		wantEvent baov1.Reason
		// wantMsg is the whole message; wantParts, when set, parts of it instead.
		wantMsg   string
		wantParts []string
	}{
		{reason: "bad-inputs rows 53 and 65: an acknowledgement without break-glass",
			kind: upgrade.RequestBreakGlassAck, value: "n", wantEvent: EventBreakGlassAckRefused,
			wantMsg: "baokeeper.dev/break-glass-ack=n refused: break-glass is not active, so there is nothing to acknowledge; nothing was done"},
		{reason: "a promotion with no blue-green upgrade",
			kind: upgrade.RequestPromote, value: "1", wantEvent: EventRequestRefused,
			wantMsg: "Ignoring baokeeper.dev/promote=1: it applies to a blue-green upgrade that waits for it, and none runs"},
		{reason: "bad-inputs row 52: a retry with nothing failed",
			kind: upgrade.RequestRetry, value: "1", wantEvent: EventRequestRefused,
			wantMsg: "Ignoring baokeeper.dev/retry=1: no upgrade or scaling runs, so there is nothing to retry"},
		{reason: "bad-inputs row 50: a promotion during a rolling upgrade", c: rolling,
			kind: upgrade.RequestPromote, value: "1", wantEvent: EventRequestRefused,
			wantParts: []string{"Ignoring baokeeper.dev/promote=1", "see status.upgrade.plan.undoPath"}},
		{reason: "bad-inputs rows 51 and 62: a rollback during a rolling upgrade", c: rolling,
			kind: upgrade.RequestRollback, value: "1", wantEvent: EventRollbackRefused,
			wantParts: []string{"Ignoring baokeeper.dev/rollback=1", "see status.upgrade.plan.undoPath"}},
		{reason: "bad-inputs row 62: a rollback with nothing running",
			kind: upgrade.RequestRollback, value: "1", wantEvent: EventRollbackRefused,
			wantMsg: "Ignoring baokeeper.dev/rollback=1: it applies to a blue-green upgrade that waits for it, and none runs"},
		{reason: "bad-inputs row 60: a rollback once green has led names the snapshot", c: pastNoReturn,
			kind: upgrade.RequestRollback, value: "late", wantEvent: EventRollbackRefused,
			wantParts: []string{"baokeeper.dev/rollback=late refused: green (bao-abc) has led, which is the point of no return",
				"(the snapshot is s3://snaps/bao.snap, of bao-1 on 2.4.0, Raft index 42)", "; nothing was done"}},
		{reason: "bad-inputs row 61: a rollback while the blue leader's step-down is in flight", c: stepDown,
			kind: upgrade.RequestRollback, value: "now", wantEvent: EventRollbackRefused,
			wantMsg: "baokeeper.dev/rollback=now refused: the step-down of blue leader bao-0 is in flight and green may lead within seconds: " +
				"set a new baokeeper.dev/rollback value once it settled; if green leads by then, the upgrade goes on to the end; nothing was done"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			c := tc.c
			if c == nil {
				c = idle
			}
			v := Judge(tc.kind, tc.value, c, &operation.Cluster{})
			g.Expect(v.Accept).To(BeFalse())
			g.Expect(v.Event).To(Equal(tc.wantEvent))
			if tc.wantParts == nil {
				g.Expect(v.Message).To(Equal(tc.wantMsg))
			}
			for _, part := range tc.wantParts {
				g.Expect(v.Message).To(ContainSubstring(part))
			}
		})
	}
}
