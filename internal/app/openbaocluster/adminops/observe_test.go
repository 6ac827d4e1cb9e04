package adminops

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestApplyAutopilotMovesStableSinceOntoOurClock(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, reason string
		leaderClock  time.Duration
		// stableFor is how long bao-2 has been healthy, in truth.
		stableFor time.Duration
	}{
		{name: "clocks agree", reason: "stable_since is taken as autopilot says it", stableFor: 40 * time.Second},
		{name: "leader 10 minutes ahead", reason: "stamped 10 minutes in our future, it would hold a promotion for 10 minutes",
			leaderClock: 10 * time.Minute, stableFor: 40 * time.Second},
		{name: "leader 10 minutes behind", reason: "stamped 10 minutes in our past, it would let a member that just turned healthy be promoted at once",
			leaderClock: -10 * time.Minute, stableFor: 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obs := &operation.Cluster{Now: now, Members: []operation.Member{
				{Name: "bao-0", Ordinal: 0, ClockOffset: tc.leaderClock}, {Name: "bao-1", Ordinal: 1}, {Name: "bao-2", Ordinal: 2}}}
			leaderNow := now.Add(tc.leaderClock)
			st := &openbao.AutopilotState{Leader: "bao-0", Healthy: true, Servers: map[string]openbao.AutopilotServer{
				"bao-0": {ID: "bao-0", Status: openbao.AutopilotStatusLeader, NodeStatus: "alive", Healthy: true, LastIndex: 10, StableSince: leaderNow.Add(-time.Hour)},
				"bao-1": {ID: "bao-1", Status: openbao.AutopilotStatusVoter, NodeStatus: "alive", Healthy: true, LastIndex: 10, StableSince: leaderNow.Add(-time.Hour)},
				"bao-2": {ID: "bao-2", Status: openbao.AutopilotStatusNonVoter, NodeStatus: "alive", Healthy: true, LastIndex: 10, StableSince: leaderNow.Add(-tc.stableFor)},
			}}
			applyAutopilot(obs, st)
			g.Expect(obs.AutopilotKnown).To(BeTrue())
			m := obs.Member("bao-2")
			g.Expect(m.Voter).To(BeFalse())
			g.Expect(now.Sub(m.StableSince)).To(Equal(tc.stableFor), tc.reason)
			g.Expect(now.Sub(m.StableSince) >= operation.NonVoterPromoteAfter).To(Equal(tc.stableFor >= operation.NonVoterPromoteAfter), tc.reason)
		})
	}
}
