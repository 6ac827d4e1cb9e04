package breakglass

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestAcknowledge(t *testing.T) {
	active := &baov1.BreakGlassStatus{Active: true, Nonce: "n1"}
	for _, tc := range []struct {
		name  string
		bg    *baov1.BreakGlassStatus
		value string
		ok    bool
		why   string
	}{
		{name: "the current nonce leaves break-glass", bg: active, value: "n1", ok: true},
		{name: "a wrong nonce is refused", bg: active, value: "n0", why: "not the current nonce"},
		{name: "an empty value is refused", bg: active, value: "", why: "not the current nonce"},
		{name: "nothing to acknowledge", bg: nil, value: "n1", why: "not active"},
		{name: "a nonce of a break-glass already left", bg: &baov1.BreakGlassStatus{Nonce: "n1"}, value: "n1", why: "not active"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ok, why := Acknowledge(tc.bg, tc.value)
			g.Expect(ok).To(Equal(tc.ok))
			if tc.why != "" {
				g.Expect(why).To(ContainSubstring(tc.why))
			}
		})
	}
}

func TestView(t *testing.T) {
	g := NewWithT(t)
	c := &operation.Cluster{AutopilotKnown: true, Leader: "bao-1", Members: []operation.Member{
		{Name: "bao-0", PodExists: true, InRaft: true, Voter: true, Healthy: true, Version: "2.4.0"},
		{Name: "bao-1", PodExists: true, InRaft: true, Voter: true, Healthy: true, Version: "2.4.0"},
		{Name: "bao-2", PodExists: true, InRaft: true, Version: "2.4.0"},
		{Name: "bao-3", PodExists: true, Version: "2.4.0"},
	}, Green: []operation.Member{{Name: "bao-x-0", PodExists: true, InRaft: true, Voter: true, Healthy: true, Version: "2.4.1"}}}
	leader, members := View(c)
	g.Expect(leader).To(Equal("bao-1"))
	g.Expect(members).To(Equal([]baov1.BreakGlassMember{
		{Name: "bao-0", Role: baov1.RaftRoleVoter, Version: "2.4.0", Healthy: true},
		{Name: "bao-1", Role: baov1.RaftRoleLeader, Version: "2.4.0", Healthy: true},
		{Name: "bao-2", Role: baov1.RaftRoleNonVoter, Version: "2.4.0"},
		{Name: "bao-3", Role: baov1.RaftRoleNotInConfiguration, Version: "2.4.0"},
		{Name: "bao-x-0", Role: baov1.RaftRoleVoter, Version: "2.4.1", Healthy: true},
	}))

	// Without autopilot (no leader, no majority), roles are unknown and health is
	// what sys/health said.
	c = &operation.Cluster{Members: []operation.Member{
		{Name: "bao-0", PodExists: true, PodReady: true, Initialized: true, Version: "2.4.0"},
		{Name: "bao-1", PodExists: true, PodReady: false},
	}}
	leader, members = View(c)
	g.Expect(leader).To(BeEmpty())
	g.Expect(members).To(Equal([]baov1.BreakGlassMember{
		{Name: "bao-0", Role: baov1.RaftRoleUnknown, Version: "2.4.0", Healthy: true},
		{Name: "bao-1", Role: baov1.RaftRoleUnknown},
	}))
}

// TestRecoverySteps: every reason names its commands with the cluster's names, and
// the last step acknowledges the current nonce.
func TestRecoverySteps(t *testing.T) {
	for _, tc := range []struct {
		in   Input
		want []string
	}{
		{in: Input{Name: "bao", Namespace: "ns", Reason: baov1.BreakGlassQuorumLost, Nonce: "abc"},
			want: []string{"kubectl get pods -n ns -l baokeeper.dev/cluster=bao", "a majority of voters", "autopilot state"}},
		{in: Input{Name: "bao", Namespace: "ns", Reason: baov1.BreakGlassRollbackFailed, Nonce: "abc", Member: "bao-x-2", Job: "bao-removepeer-1a2b-2-3", Green: "bao-x",
			Snapshot: &baov1.SnapshotReceipt{Location: "s3://b/k.snap"}},
			want: []string{"kubectl logs -n ns job/bao-removepeer-1a2b-2-3", "kubectl exec -n ns bao-x-2", "s3://b/k.snap", "bao-x is left as it is"}},
		{in: Input{Name: "bao", Namespace: "ns", Reason: baov1.BreakGlassGreenLeads, Nonce: "abc", Leader: "bao-x-0"},
			want: []string{"bao-x-0 leads", "Do not step it down", "kubectl bao restore bao", "no pre-upgrade snapshot"}},
	} {
		t.Run(string(tc.in.Reason), func(t *testing.T) {
			g := NewWithT(t)
			steps := RecoverySteps(tc.in)
			all := strings.Join(steps, "\n")
			for _, w := range tc.want {
				g.Expect(all).To(ContainSubstring(w))
			}
			g.Expect(steps[len(steps)-1]).To(Equal("Then let baokeeper go on: kubectl annotate openbaocluster bao -n ns baokeeper.dev/break-glass-ack=abc --overwrite --field-manager=<your name>"))
			g.Expect(Runbook(tc.in.Reason)).To(HavePrefix("docs/runbooks/break-glass-"))
		})
	}
}

func TestMajorityLost(t *testing.T) {
	rec := &operation.Recovery{Voters: []string{"bao-0", "bao-1", "bao-2"}, Survivor: "bao-0", Loss: "nothing acknowledged is lost",
		Gone: map[string]string{"bao-1": "its volume claim data-bao-1 is deleted", "bao-2": "its volume claim data-bao-2 is deleted"}}

	t.Run("the view lists every last voter, why its data is gone and the survivor's index", func(t *testing.T) {
		g := NewWithT(t)
		c := &operation.Cluster{Members: []operation.Member{
			{Name: "bao-0", PodExists: true, PodReady: true, Initialized: true, Version: "2.4.0", CommittedIndex: 812},
			{Name: "bao-1", PodExists: true},
		}}
		_, members := View(c)
		g.Expect(WithRecovery(members, rec)).To(Equal([]baov1.BreakGlassMember{
			{Name: "bao-0", Role: baov1.RaftRoleUnknown, Version: "2.4.0", Healthy: true, CommittedIndex: 812},
			{Name: "bao-1", Role: baov1.RaftRoleUnknown, Lost: "its volume claim data-bao-1 is deleted"},
			{Name: "bao-2", Role: baov1.RaftRoleUnknown, Lost: "its volume claim data-bao-2 is deleted"},
		}), "bao-2 has no pod and is listed from the record")
		g.Expect(Others(rec)).To(Equal([]string{"bao-1", "bao-2"}))
	})

	t.Run("the steps are OpenBao's peers.json recovery on the survivor, with the names filled in", func(t *testing.T) {
		g := NewWithT(t)
		steps := RecoverySteps(Input{Name: "bao", Namespace: "ns", Reason: baov1.BreakGlassMajorityLost, Nonce: "n1", Member: "bao-0",
			Survivor: "bao-0", SurvivorAddress: "bao-0.bao-internal.ns.svc:8201", Others: Others(rec)})
		all := strings.Join(steps, "\n")
		g.Expect(all).To(ContainSubstring(`kubectl exec -n ns bao-0 -c openbao -- sh -c 'printf %s "[{\"id\":\"bao-0\",\"address\":\"bao-0.bao-internal.ns.svc:8201\",\"non_voter\":false}]" > /openbao/data/raft/peers.json'`))
		g.Expect(all).To(ContainSubstring("kubectl delete pod -n ns bao-0"))
		g.Expect(all).To(ContainSubstring("kubectl bao recover-quorum bao -n ns --from bao-0 --nonce n1"), "the recovery baokeeper carries out, with the names filled in")
		g.Expect(all).To(ContainSubstring("kubectl delete pvc -n ns data-bao-1 --wait=false; kubectl delete pod -n ns bao-1"))
		g.Expect(all).To(ContainSubstring("kubectl delete pvc -n ns data-bao-2 --wait=false; kubectl delete pod -n ns bao-2"))
		g.Expect(all).To(ContainSubstring("no other voter of the last configuration (bao-1, bao-2) still runs"))
		g.Expect(steps[len(steps)-1]).To(ContainSubstring("baokeeper.dev/break-glass-ack=n1"))
		g.Expect(Runbook(baov1.BreakGlassMajorityLost)).To(Equal("docs/runbooks/break-glass-majority-lost.md"))
	})

	t.Run("without a survivor, the snapshot", func(t *testing.T) {
		g := NewWithT(t)
		steps := RecoverySteps(Input{Name: "bao", Namespace: "ns", Reason: baov1.BreakGlassMajorityLost, Nonce: "n1"})
		g.Expect(strings.Join(steps, "\n")).To(ContainSubstring("kubectl bao restore bao -n ns --into bao-back"))
		g.Expect(strings.Join(steps, "\n")).NotTo(ContainSubstring("peers.json"))
	})
}
