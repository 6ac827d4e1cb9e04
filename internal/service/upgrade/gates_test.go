package upgrade

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

const (
	gateImage   = "openbao:2.4.1"
	leaderAddr  = "https://bao-1.bao-internal.ns.svc:8200"
	leaderIndex = 900
)

// afterFinalElection is a 3-member cluster right after its last member, bao-2 (the
// old leader), came back on the target and bao-1 took over: every pod Ready on the
// target and every member a voter, and autopilot on bao-1 still calls the followers
// unhealthy with term 0 and index 0, as it does until their next Echo
// (docs/design/autopilot-tail.md). Each member's own sys/leader names bao-1,
// caught up.
func afterFinalElection() *operation.Cluster {
	c := &operation.Cluster{Leader: "bao-1", AutopilotKnown: true, AutopilotHealthy: false, LeaderIndex: leaderIndex,
		LeaderAddress: leaderAddr, LeaderCommitted: leaderIndex}
	for i := range 3 {
		m := operation.Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, PodExists: true, PodReady: true, Image: gateImage,
			Initialized: true, Version: "2.4.1", InRaft: true, Voter: true,
			LeaderAddress: leaderAddr, AppliedIndex: leaderIndex - 2}
		if m.Name == "bao-1" {
			m.Healthy, m.LastIndex = true, leaderIndex
		}
		c.Members = append(c.Members, m)
	}
	return c
}

func TestMemberGatesAcceptAMembersOwnReadWhereAutopilotLags(t *testing.T) {
	cases := []struct {
		name, reason string
		change       func(c *operation.Cluster)
		// want is the first gate that fails for bao-2; "" when every gate holds.
		want string
	}{
		{name: "every member follows the leader, caught up", reason: "what autopilot will say after the standbys' next Echo, each member shows by itself now",
			change: func(*operation.Cluster) {}},
		{name: "autopilot caught up", reason: "autopilot's verdict needs no member read",
			change: func(c *operation.Cluster) {
				c.AutopilotHealthy, c.LeaderAddress, c.LeaderCommitted = true, "", 0
				for i := range c.Members {
					c.Members[i].Healthy, c.Members[i].LastIndex, c.Members[i].LeaderAddress = true, leaderIndex, ""
				}
			}},
		{name: "bao-2 still follows the old leader", reason: "a standby that names another active node has not applied the new leader's entry",
			change: func(c *operation.Cluster) { c.Members[2].LeaderAddress = "https://bao-2.bao-internal.ns.svc:8200" },
			want:   "MemberHealthy"},
		{name: "bao-2 did not answer", reason: "no read, no proof",
			change: func(c *operation.Cluster) { c.Members[2].LeaderAddress, c.Members[2].AppliedIndex = "", 0 },
			want:   "MemberHealthy"},
		{name: "bao-2 is behind", reason: "following the leader is not enough: its applied index must be within maxLagEntries",
			change: func(c *operation.Cluster) { c.Members[2].AppliedIndex = leaderIndex - 200 },
			want:   "MemberHealthy"},
		{name: "bao-2 is sealed", reason: "a member that does not run proves nothing",
			change: func(c *operation.Cluster) { c.Members[2].Sealed = true }, want: "Unsealed"},
		{name: "bao-0 follows the old leader", reason: "the cluster verdict needs every voter healthy or following",
			change: func(c *operation.Cluster) { c.Members[0].LeaderAddress = "https://bao-2.bao-internal.ns.svc:8200" },
			want:   "ClusterHealthy"},
		{name: "a voter with no pod", reason: "a Raft server without a member can only be judged by autopilot",
			change: func(c *operation.Cluster) {
				c.Extra = []operation.Member{{Name: "bao-3", Ordinal: -1, InRaft: true, Voter: true}}
			},
			want: "ClusterHealthy"},
		{name: "the leader's own read is missing", reason: "without the leader's address and committed index nothing can be compared",
			change: func(c *operation.Cluster) { c.LeaderAddress, c.LeaderCommitted = "", 0 },
			want:   "MemberHealthy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := afterFinalElection()
			tc.change(c)
			got := FirstFailing(MemberGates(c, "bao-2", gateImage, "2.4.1", 100))
			if tc.want == "" {
				g.Expect(got).To(BeNil(), tc.reason)
				return
			}
			g.Expect(got).NotTo(BeNil(), tc.reason)
			g.Expect(got.Name).To(Equal(tc.want), tc.reason)
		})
	}
}

// A member that restarted quickly is still healthy in autopilot (the old instance's
// verdict, until the contact threshold); the LeaderContact gate holds until the
// leader heard from the new instance (found on the rig: the next member's deletion
// lost the quorum while the leader still dialled the old pod address).
func TestLeaderContactGate(t *testing.T) {
	now := time.Date(2026, 12, 6, 22, 43, 51, 0, time.UTC)
	// autopilot's last_contact counts the member's own echoes to the active node; where
	// the member's metrics were read, they say whether the leader's Raft reached its
	// process (found in CI: the leader still dialled the old pod address when the next
	// member went).
	cases := []struct {
		name        string
		readyAgo    time.Duration
		lastContact time.Duration
		replication operation.Replication
		want        string
		says        string
	}{
		{name: "heard 0.2 s ago, Ready 1 s ago, metrics not read: in contact", readyAgo: time.Second, lastContact: 200 * time.Millisecond},
		{name: "heard 4 s ago, Ready 1 s ago, metrics not read: the old instance's contact", readyAgo: time.Second, lastContact: 4 * time.Second,
			want: "LeaderContact", says: "waiting for the leader to hear from bao-2 since it restarted"},
		{name: "Ready for an hour, heard 4 s ago: in contact", readyAgo: time.Hour, lastContact: 4 * time.Second},
		{name: "heard by autopilot, no replication in its metrics", readyAgo: time.Second, lastContact: 100 * time.Millisecond,
			replication: operation.ReplicationNone, want: "LeaderContact",
			says: "waiting for the leader's Raft to reach bao-2 since it restarted (its metrics show no replication received yet)"},
		{name: "heard by autopilot, its metrics did not answer", readyAgo: time.Second, lastContact: 100 * time.Millisecond,
			replication: operation.ReplicationUnknown, want: "LeaderContact", says: "its metrics did not answer"},
		{name: "heard by autopilot, replication in its metrics", readyAgo: time.Second, lastContact: 100 * time.Millisecond,
			replication: operation.ReplicationSeen},
		{name: "an old contact by autopilot, replication in its metrics", readyAgo: time.Second, lastContact: 4 * time.Second,
			replication: operation.ReplicationSeen},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := settledAt(now)
			m := c.Member("bao-2")
			m.ReadySince, m.LastContact, m.Replication = now.Add(-tc.readyAgo), tc.lastContact, tc.replication
			failing := FirstFailing(MemberGates(c, "bao-2", gateImage, "2.4.1", 100))
			if tc.want == "" {
				g.Expect(failing).To(BeNil())
				return
			}
			g.Expect(failing).NotTo(BeNil())
			g.Expect(failing.Name).To(Equal(tc.want))
			g.Expect(failing.WaitingFor).To(ContainSubstring(tc.says))
		})
	}
	t.Run("the leader itself", func(t *testing.T) {
		c := afterFinalElection()
		c.Now = now
		l := c.Member("bao-1")
		l.ReadySince, l.LastContact = now.Add(-time.Second), 0
		NewWithT(t).Expect(c.HeardSince(l)).To(BeTrue())
	})
}

// A replaced member whose clock runs minutes off refuses its peers' certificates and
// never turns healthy: the gate that holds names its clock (found on the rig: the
// rollout held "waiting for autopilot to report bao-0 healthy" and said nothing of the
// clock that kept it out).
func TestMemberGatesNameAClockThatIsOff(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 14, 0, 0, time.UTC)
	cases := []struct {
		name string
		set  func(m *operation.Member)
		gate string
	}{
		{name: "not healthy", set: func(m *operation.Member) { m.Healthy, m.LeaderAddress = false, "" }, gate: "MemberHealthy"},
		{name: "not a voter", set: func(m *operation.Member) { m.Voter = false }, gate: "Voter"},
		{name: "not reached by the leader", set: func(m *operation.Member) { m.Replication = operation.ReplicationNone }, gate: "LeaderContact"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := settledAt(now)
			m := c.Member("bao-2")
			m.ReadySince, m.ClockOffset, m.Replication = now.Add(-time.Second), -10*time.Minute, operation.ReplicationSeen
			tc.set(m)
			failing := FirstFailing(MemberGates(c, "bao-2", gateImage, "2.4.1", 100))
			g.Expect(failing).NotTo(BeNil())
			g.Expect(failing.Name).To(Equal(tc.gate))
			g.Expect(failing.WaitingFor).To(ContainSubstring("bao-2 (its clock is 10m0s behind baokeeper's"))
		})
	}
}

// settledAt is afterFinalElection at now, every member healthy, caught up and Ready
// for an hour: the state a gate test then changes one member of.
func settledAt(now time.Time) *operation.Cluster {
	c := afterFinalElection()
	c.Now, c.AutopilotHealthy = now, true
	for i := range c.Members {
		c.Members[i].Healthy, c.Members[i].LastIndex = true, leaderIndex
		c.Members[i].ReadySince = now.Add(-time.Hour)
	}
	return c
}
