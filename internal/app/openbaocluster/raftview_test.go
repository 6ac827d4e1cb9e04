package openbaocluster

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// server is one autopilot server for the tables below.
func server(status string, healthy bool) openbao.AutopilotServer {
	return openbao.AutopilotServer{Status: status, Healthy: healthy, NodeStatus: "alive", LastIndex: 100}
}

func withAutopilot(leader string, servers map[string]openbao.AutopilotServer) obsOpt {
	return func(o *observation) {
		for id, s := range servers {
			s.ID = id
			servers[id] = s
		}
		o.autopilot = &openbao.AutopilotState{Leader: leader, Servers: servers}
	}
}

// withActive marks one member's sys/health as the active node; the others stay
// standbys.
func withActive(name string) obsOpt {
	return func(o *observation) {
		for n, h := range o.health {
			h.Standby = n != name
		}
	}
}

// withClock makes member's sys/health say its clock is off by d.
func withClock(name string, d time.Duration) obsOpt {
	return func(o *observation) {
		asked := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
		h := o.health[name]
		h.AskedAt, h.AnsweredAt, h.ServerTime = asked, asked.Add(20*time.Millisecond), asked.Add(d).Truncate(time.Second)
	}
}

func TestRaftTruth(t *testing.T) {
	one := int32(1)
	cases := []struct {
		name, reason  string
		replicas      *int32
		obs           *observation
		wantPhase     baov1.ClusterPhase
		wantAvailable metav1.ConditionStatus
		wantReason    baov1.Reason
		wantMsg       string
		wantVoters    string
		wantDegraded  baov1.Reason
		wantRoles     map[string]baov1.RaftRole
	}{
		{
			name: "healthy", reason: "a leader and every voter healthy",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", true), "bao-2": server("voter", true)})),
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady,
			wantMsg: "3 of 3 members Ready", wantVoters: "3/3",
			wantRoles: map[string]baov1.RaftRole{"bao-0": baov1.RaftRoleLeader, "bao-1": baov1.RaftRoleVoter, "bao-2": baov1.RaftRoleVoter},
		},
		{
			name: "scaled 3 to 1 behind Raft's back", reason: "the bug: the survivor is Ready but a standby with no leader; status must not say Running",
			replicas:  &one,
			obs:       newObs(withSTS(true), withMembers(1, 1, "2.4.0"), withActive("nobody")),
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionFalse, wantReason: baov1.ReasonNoLeader,
			wantMsg: "none is the active node: Raft has no leader", wantVoters: "",
			wantRoles: map[string]baov1.RaftRole{"bao-0": baov1.RaftRoleUnknown},
		},
		{
			name: "dead voters without pods", reason: "5 to 3 by hand: two voters remain in the configuration; every voter counts (the scaling removes them)",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", true), "bao-2": server("voter", true),
				"bao-3": server("voter", false), "bao-4": server("voter", false)})),
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady,
			wantVoters: "3/5",
		},
		{
			name: "quorum lost", reason: "a leader that is still active, with fewer healthy voters than a majority",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", false), "bao-2": server("voter", false)})),
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionFalse, wantReason: baov1.ReasonQuorumLost,
			wantMsg: "only 1 of 3 Raft voters are healthy (not healthy: bao-1, bao-2); a majority needs 2", wantVoters: "1/3",
		},
		{
			name: "quorum lost, a clock off", reason: "a member whose clock is minutes off rejects its peers' certificates: the status names its clock and what to fix",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withClock("bao-2", -10*time.Minute), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", false), "bao-2": server("voter", false)})),
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionFalse, wantReason: baov1.ReasonQuorumLost,
			wantMsg:    "(not healthy: bao-1, bao-2 (its clock is 10m0s behind baokeeper's: OpenBao checks certificate and token lifetimes against it; fix the time synchronization of its node)); a majority needs 2",
			wantVoters: "1/3",
		},
		{
			name: "non-voter", reason: "a member that joined as a non-voter is shown as one",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", true), "bao-2": server("non-voter", true)})),
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady, wantVoters: "2/3",
			wantDegraded: baov1.ReasonFailureToleranceLow,
			wantMsg:      "Raft tolerates the loss of 0 voters, but a 3-member cluster promises 1: bao-2 is a non-voter (baokeeper promotes a non-voter once it has been healthy and caught up for 30s)",
			wantRoles:    map[string]baov1.RaftRole{"bao-2": baov1.RaftRoleNonVoter},
		},
		{
			name: "one voter of three", reason: "the bug: a cluster at failure tolerance 0 showed Running, voters 1/1 and Degraded=False",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("non-voter", true), "bao-2": server("non-voter", true)})),
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady, wantVoters: "1/3",
			wantDegraded: baov1.ReasonFailureToleranceLow, wantMsg: "bao-1, bao-2 are non-voters",
		},
		{
			name: "a member outside the configuration", reason: "a member whose pod serves but that Raft does not know counts as missing",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", true)})),
			wantPhase: baov1.PhaseDegraded, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady, wantVoters: "2/3",
			wantDegraded: baov1.ReasonFailureToleranceLow, wantMsg: "bao-2 is not in the Raft configuration",
		},
		{
			name: "every member votes, one unhealthy", reason: "not yet Degraded on its own: autopilot's verdict lags a restarted member past 30 s on the rig after a rollout (issue 39 asks for it; a debounce is needed first)",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", true), "bao-2": server("voter", false)})),
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady, wantVoters: "2/3",
			wantDegraded: baov1.ReasonAllMembersReady,
		},
		{
			name: "every member votes and is healthy", reason: "the promise holds: Running, Degraded=False",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", map[string]openbao.AutopilotServer{
				"bao-0": server("leader", true), "bao-1": server("voter", true), "bao-2": server("voter", true)})),
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonQuorumReady, wantVoters: "3/3",
			wantDegraded: baov1.ReasonAllMembersReady,
		},
		{
			name: "right after an election", reason: "autopilot lists the others as left with index 0: not trusted, no alarm",
			obs: newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-1"), withAutopilot("bao-1", map[string]openbao.AutopilotServer{
				"bao-0": {Status: "voter", NodeStatus: "left"}, "bao-1": server("leader", true), "bao-2": {Status: "voter", NodeStatus: "left"}})),
			wantPhase: baov1.PhaseRunning, wantAvailable: metav1.ConditionTrue, wantReason: baov1.ReasonLeaderActive,
			wantMsg: "3 of 3 members Ready", wantVoters: "",
			wantRoles: map[string]baov1.RaftRole{"bao-0": baov1.RaftRoleUnknown},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(withPhase(baov1.PhaseRunning), withCurrent("2.4.0"), withInitialized())
			c.Spec.Replicas = tc.replicas
			p := &pass{cluster: c, obs: tc.obs, decision: &upgrade.Decision{Allowed: true}}
			computeStatus(c, tc.obs, p, true)
			g.Expect(c.Status.Phase).To(Equal(tc.wantPhase), tc.reason)
			av := cond(c, baov1.ConditionAvailable)
			g.Expect(av.Status).To(Equal(tc.wantAvailable), tc.reason)
			g.Expect(av.Reason).To(Equal(string(tc.wantReason)), tc.reason)
			g.Expect(c.Status.Message).To(ContainSubstring(tc.wantMsg), tc.reason)
			g.Expect(c.Status.Voters).To(Equal(tc.wantVoters), tc.reason)
			if tc.wantDegraded != "" {
				g.Expect(cond(c, baov1.ConditionDegraded).Reason).To(Equal(string(tc.wantDegraded)), tc.reason)
			}
			for name, role := range tc.wantRoles {
				var got baov1.RaftRole
				for _, m := range c.Status.Members {
					if m.Name == name {
						got = m.RaftRole
					}
				}
				g.Expect(got).To(Equal(role), "%s: %s", name, tc.reason)
			}
		})
	}
}

func TestUpgradeStateSaysDeferredVersion(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withSpecVersion("2.4.0"))
	c.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", DeferredVersion: "2.4.0",
		Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}, CompletedPods: []string{"bao-2"}}
	_, msg := upgradeState(c)
	g.Expect(msg).To(ContainSubstring("spec.version is now 2.4.0, which is planned once this upgrade finishes"),
		"bug: spec.version set back after the first pod deletion went on with only a debug log line")
}

// A new cluster is Running only once every member votes: the README's minimal
// cluster rested for minutes with one voter and two non-voters while it said
// Running. Until then it stays Initializing, and the message names the non-voters.
func TestNewClusterIsRunningOnlyOnceEveryMemberVotes(t *testing.T) {
	g := NewWithT(t)
	servers := map[string]openbao.AutopilotServer{"bao-0": server("leader", true), "bao-1": server("non-voter", true), "bao-2": server("non-voter", true)}
	c := newCluster(withPhase(baov1.PhaseInitializing), withCurrent("2.4.0"), withInitialized())
	obs := newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", servers))
	computeStatus(c, obs, &pass{cluster: c, obs: obs, decision: &upgrade.Decision{Allowed: true}}, true)
	g.Expect(c.Status.Phase).To(Equal(baov1.PhaseInitializing))
	g.Expect(cond(c, baov1.ConditionProgressing).Reason).To(Equal(string(baov1.ReasonWaitingForVoters)))
	g.Expect(cond(c, baov1.ConditionDegraded).Reason).To(Equal(string(baov1.ReasonFailureToleranceLow)))
	g.Expect(c.Status.Message).To(ContainSubstring("bao-1, bao-2 are non-voters"))
	g.Expect(c.Status.Voters).To(Equal("1/3"))

	By := "once both are promoted"
	servers["bao-1"], servers["bao-2"] = server("voter", true), server("voter", true)
	obs = newObs(withSTS(true), withMembers(3, 3, "2.4.0"), withActive("bao-0"), withAutopilot("bao-0", servers))
	computeStatus(c, obs, &pass{cluster: c, obs: obs, decision: &upgrade.Decision{Allowed: true}}, true)
	g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning), By)
	g.Expect(cond(c, baov1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse), By)
	g.Expect(c.Status.Voters).To(Equal("3/3"), By)
}

// A member re-created outside an operation has no version until its health is read;
// the message never shows an empty version.
func TestMessageNeverShowsAnEmptyVersion(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withPhase(baov1.PhaseRunning), withCurrent("2.5.1"), withSpecVersion("2.5.1"), withInitialized())
	obs := newObs(withSTS(true), withMembers(3, 3, "2.5.1"), withActive("bao-0"))
	delete(obs.health, "bao-2")
	computeStatus(c, obs, &pass{cluster: c, obs: obs, decision: &upgrade.Decision{Allowed: true}}, true)
	g.Expect(c.Status.Message).To(Equal("3 of 3 members Ready, running 2.5.1"))
}
