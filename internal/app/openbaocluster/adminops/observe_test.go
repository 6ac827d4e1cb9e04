package adminops

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/openbao/openbaofake"
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

func TestFollowingReadsEveryResponsiveMembersLeader(t *testing.T) {
	g := NewWithT(t)
	addr := func(i int) string { return fmt.Sprintf("https://bao-%d.bao-internal.ns.svc:8200", i) }
	bao := &openbaofake.Fake{}
	bao.SetMemberLeader(addr(0), openbao.Leader{LeaderAddress: addr(1), RaftAppliedIndex: 98, RaftCommittedIndex: 98})
	bao.SetMemberLeader(addr(1), openbao.Leader{IsSelf: true, LeaderAddress: addr(1), RaftAppliedIndex: 100, RaftCommittedIndex: 100})
	// bao-2 is not Ready: it is not asked.
	bao.SetMemberLeader(addr(2), openbao.Leader{LeaderAddress: addr(1), RaftAppliedIndex: 100})
	up := func(name string, ordinal int) operation.Member {
		return operation.Member{Name: name, Ordinal: ordinal, PodExists: true, PodReady: true, Initialized: true, Version: "2.4.1", InRaft: true, Voter: true}
	}
	obs := &operation.Cluster{Leader: "bao-1", AutopilotKnown: true, Members: []operation.Member{up("bao-0", 0), up("bao-1", 1), up("bao-2", 2)}}
	obs.Members[2].PodReady = false
	h := &healthReader{r: &Reconciler{}, bao: bao, addrs: map[string]string{"bao-0": addr(0), "bao-1": addr(1), "bao-2": addr(2)}}
	h.following(context.Background(), obs)

	g.Expect(obs.LeaderAddress).To(Equal(addr(1)), "the leader names itself")
	g.Expect(obs.LeaderCommitted).To(BeEquivalentTo(100))
	g.Expect(obs.Members[0].LeaderAddress).To(Equal(addr(1)))
	g.Expect(obs.Members[0].AppliedIndex).To(BeEquivalentTo(98))
	g.Expect(obs.Members[2].LeaderAddress).To(BeEmpty(), "a member whose pod is not Ready is not read")
	g.Expect(obs.Follows(&obs.Members[0], 10)).To(BeTrue())
	g.Expect(obs.Follows(&obs.Members[0], 1)).To(BeFalse(), "2 entries behind, 1 allowed")
	g.Expect(obs.Follows(&obs.Members[2], 10)).To(BeFalse())
	g.Expect(bao.Calls(openbaofake.MethodMemberLeader)).To(Equal(2))
}

func TestReplicationIsReadFromMembersThatTurnedReadyLately(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 7, 0, 30, 0, 0, time.UTC)
	addr := func(i int) string { return fmt.Sprintf("https://bao-%d.bao-internal.ns.svc:8200", i) }
	bao := &openbaofake.Fake{}
	bao.SetReplication(addr(1), openbao.Replication{AppendEntries: 12})
	bao.SetReplication(addr(2), openbao.Replication{})
	// bao-3 has no answer set: its metrics do not answer.
	member := func(i int, readyAgo time.Duration) operation.Member {
		return operation.Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, PodExists: true, PodReady: true, Initialized: true,
			Version: "2.4.1", InRaft: true, Voter: true, ReadySince: now.Add(-readyAgo)}
	}
	obs := &operation.Cluster{Now: now, Leader: "bao-0", AutopilotKnown: true, Members: []operation.Member{
		member(0, time.Second), member(1, time.Second), member(2, time.Second), member(3, time.Second), member(4, time.Hour),
	}}
	h := &healthReader{r: &Reconciler{}, bao: bao, addrs: map[string]string{}}
	for i := range 5 {
		h.addrs[fmt.Sprintf("bao-%d", i)] = addr(i)
	}
	h.replication(context.Background(), obs)

	g.Expect(obs.Members[0].Replication).To(Equal(operation.ReplicationNotRead), "the leader receives no replication: not asked")
	g.Expect(obs.Members[1].Replication).To(Equal(operation.ReplicationSeen))
	g.Expect(obs.Members[2].Replication).To(Equal(operation.ReplicationNone), "Ready, but the leader's Raft has not reached it")
	g.Expect(obs.Members[3].Replication).To(Equal(operation.ReplicationUnknown))
	g.Expect(obs.Members[4].Replication).To(Equal(operation.ReplicationNotRead), "Ready for an hour: not asked")
	g.Expect(bao.Calls(openbaofake.MethodMemberReplication)).To(Equal(3))
	g.Expect(obs.LeaderReaches(&obs.Members[1])).To(BeTrue())
	g.Expect(obs.LeaderReaches(&obs.Members[2])).To(BeFalse())
	g.Expect(obs.LeaderReaches(&obs.Members[3])).To(BeFalse())
}
