package statusapply

import (
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
	// Every status field is owned by someone, or a write would silently drop it.
	full := &baov1.OpenBaoClusterStatus{
		Phase: baov1.PhaseRunning, Message: "m", CurrentVersion: "2.4.0", ObservedGeneration: 1, ReadyMembers: 3,
		Members: []baov1.MemberStatus{{Name: "bao-0"}}, Upgrade: &baov1.UpgradeStatus{}, BlueGreen: &baov1.BlueGreenStatus{},
		BreakGlass: &baov1.BreakGlassStatus{}, Requests: baov1.RequestsStatus{Retry: "1"}, TLS: &baov1.TLSStatus{},
	}
	w, err := Workload().part(full)
	g.Expect(err).NotTo(HaveOccurred())
	u, err := Upgrade().part(full)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(w) + len(u)).To(Equal(11))
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
