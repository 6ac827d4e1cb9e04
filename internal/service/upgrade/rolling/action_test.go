package rolling

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// TestToAction: every rolling decision maps onto the shared closed set of actions,
// and only the ones that change the cluster are disruptive.
func TestToAction(t *testing.T) {
	cases := []struct {
		action     Action
		kind       operation.Kind
		object     operation.Object
		job        operation.JobKind
		disruptive bool
	}{
		{ActionUpdateTemplate, operation.KindApply, operation.ObjectPodTemplate, "", true},
		{ActionBeginStep, operation.KindPersist, "", "", false},
		{ActionStepDown, operation.KindCreateJob, "", operation.JobStepDown, true},
		{ActionStepDownVerified, operation.KindPersist, "", "", false},
		{ActionDeletePod, operation.KindDelete, operation.ObjectPod, "", true},
		{ActionPromote, operation.KindCreateJob, "", operation.JobPromote, true},
		{ActionGatesPassed, operation.KindPersist, "", "", false},
		{ActionCompleteMember, operation.KindPersist, "", "", false},
		{ActionComplete, operation.KindComplete, "", "", false},
		{ActionFail, operation.KindFail, "", "", false},
		{ActionHold, operation.KindHold, "", "", false},
		{ActionWait, operation.KindWait, "", "", false},
	}
	for _, tc := range cases {
		t.Run(string(tc.action), func(t *testing.T) {
			g := NewWithT(t)
			a := ToAction(Decision{Action: tc.action, Pod: "bao-1", WaitingFor: "w", Reason: "R", Message: "m"}, "img:2", "2")
			g.Expect(a.Kind).To(Equal(tc.kind))
			g.Expect(a.Object).To(Equal(tc.object))
			g.Expect(a.Job).To(Equal(tc.job))
			g.Expect(a.Member).To(Equal("bao-1"))
			g.Expect(a.Disruptive()).To(Equal(tc.disruptive))
		})
	}
	g := NewWithT(t)
	g.Expect(ToAction(Decision{Action: ActionCompleteMember, Pod: "bao-1"}, "img:2", "2.4.1").Event).To(Equal("bao-1 upgraded to 2.4.1"))
	g.Expect(ToAction(Decision{Action: ActionDeletePod, Pod: "bao-1"}, "img:2", "2.4.1").Event).To(Equal("Replacing bao-1 with img:2"))
}
