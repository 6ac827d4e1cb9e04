package statusapply

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestOwnersAreDisjointAndCoverTheStatus(t *testing.T) {
	g := NewWithT(t)
	for _, f := range Workload().Fields {
		g.Expect(Upgrade().Fields).NotTo(ContainElement(f), "field %s has two owners", f)
	}
	for _, c := range Workload().Conditions {
		g.Expect(Upgrade().Conditions).NotTo(ContainElement(c), "condition %s has two owners", c)
	}
	// Every status field is owned by exactly one owner, or a write would silently drop
	// it. The field list comes from the type, so a new field cannot be forgotten.
	typ := reflect.TypeOf(baov1.OpenBaoClusterStatus{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "conditions" {
			continue // shared, split by condition type
		}
		owners := 0
		for _, o := range []Owner{Workload(), Upgrade()} {
			if slices.Contains(o.Fields, name) {
				owners++
			}
		}
		g.Expect(owners).To(Equal(1), "status.%s must have exactly one owner", name)
	}
	full := &baov1.OpenBaoClusterStatus{
		Phase: baov1.PhaseRunning, Message: "m", CurrentVersion: "2.4.0", ObservedGeneration: 1, ReadyMembers: 3,
		Members: []baov1.MemberStatus{{Name: "bao-0"}}, Upgrade: &baov1.UpgradeStatus{}, BlueGreen: &baov1.BlueGreenStatus{},
		BreakGlass: &baov1.BreakGlassStatus{}, Requests: baov1.RequestsStatus{Retry: "1"}, TLS: &baov1.TLSStatus{},
		LastSnapshot: &baov1.SnapshotReceipt{Location: "s3://b/k"},
	}
	u, err := Upgrade().part(full)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u).To(HaveKey("lastSnapshot"), "an owned field is written")
}

func TestPartKeepsOnlyOwnedConditions(t *testing.T) {
	g := NewWithT(t)
	st := &baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Phase: baov1.PhaseRunning, Conditions: []metav1.Condition{
		{Type: string(baov1.ConditionAvailable), Status: metav1.ConditionTrue, Reason: "QuorumReady"},
		{Type: string(baov1.ConditionUpgradePaused), Status: metav1.ConditionFalse, Reason: "NotPaused"},
	}}
	w, err := Workload().part(st)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w).To(HaveKey("phase"))
	g.Expect(w).NotTo(HaveKey("currentVersion"), "the workload reconciler must never write the version back")
	g.Expect(w["conditions"]).To(HaveLen(1))
	u, err := Upgrade().part(st)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u).To(HaveKeyWithValue("currentVersion", "2.4.0"))
	g.Expect(u).NotTo(HaveKey("phase"))
	g.Expect(u["conditions"]).To(ConsistOf(HaveKeyWithValue("type", "UpgradePaused")))
}
