package operation

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// voters builds a cluster of n voters bao-0..n-1, with the given ones unhealthy, and
// extra Raft servers without pods (x-0.., each unhealthy when extraUnhealthy).
func voters(n int, unhealthy []int, extra int, extraUnhealthy bool) *Cluster {
	c := &Cluster{}
	for i := range n {
		m := Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, InRaft: true, Voter: true, Healthy: true}
		for _, u := range unhealthy {
			if u == i {
				m.Healthy = false
			}
		}
		c.Members = append(c.Members, m)
	}
	for i := range extra {
		c.Extra = append(c.Extra, Member{Name: fmt.Sprintf("x-%d", i), InRaft: true, Voter: true, Healthy: !extraUnhealthy})
	}
	return c
}

func TestProject(t *testing.T) {
	cases := []struct {
		name, reason string
		c            *Cluster
		ch           Change
		wantTol      int
		wantOK       bool
	}{
		{"3: take one down", "3 voters tolerate one replaced member", voters(3, nil, 0, false), Change{Remove: "bao-2"}, 0, true},
		{"3 with one unhealthy: take another down", "two of three down loses the majority", voters(3, []int{0}, 0, false), Change{Remove: "bao-2"}, -1, false},
		{"3 with one unhealthy: remove the unhealthy one", "removing a dead voter raises tolerance", voters(3, []int{2}, 0, false), Change{Remove: "bao-2"}, 0, true},
		{"5: take one down", "5 voters tolerate two", voters(5, nil, 0, false), Change{Remove: "bao-4"}, 1, true},
		{"5 with two unhealthy: take a healthy one down", "three of five down loses the majority", voters(5, []int{0, 1}, 0, false), Change{Remove: "bao-4"}, -1, false},
		{"7: take one down", "7 voters tolerate three", voters(7, nil, 0, false), Change{Remove: "bao-6"}, 2, true},
		{"7 with three unhealthy: take one down", "a fourth down loses the majority", voters(7, []int{0, 1, 2}, 0, false), Change{Remove: "bao-6"}, -1, false},
		{"3: add a voter", "a new voter counts as unhealthy: 3 healthy of 4 keeps a majority of 3", voters(3, nil, 0, false), Change{AddVoters: 1}, 0, true},
		{"3 with one unhealthy: add a voter", "2 healthy of 4 is below a majority of 3: remove the dead voter first", voters(3, []int{1}, 0, false), Change{AddVoters: 1}, -1, false},
		{"3+3: add three green voters at once", "3 healthy of 6 is below a majority of 4: green must sync before it votes", voters(3, nil, 0, false), Change{AddVoters: 3}, -1, false},
		{"3+3: green healthy, remove a blue voter", "6 healthy voters, one leaves: 5 healthy of 5", voters(6, nil, 0, false), Change{Remove: "bao-0"}, 2, true},
		{"5+5: add five green voters at once", "5 healthy of 10 is below a majority of 6", voters(5, nil, 0, false), Change{AddVoters: 5}, -1, false},
		{"5+5: all healthy, one leaves", "10 healthy voters, one leaves: 9 healthy of 9", voters(10, nil, 0, false), Change{Remove: "bao-9"}, 4, true},
		{"5 scaled to 3 by hand: two dead voters without pods", "3 healthy of 5 keeps a majority, with no tolerance left", voters(3, nil, 2, true), Change{}, 0, true},
		{"two dead voters: remove one", "3 healthy of 4 voters keeps a majority of 3", voters(3, nil, 2, true), Change{Remove: "x-1"}, 0, true},
		{"two dead voters: take a healthy member down", "2 healthy of 4 loses the majority: remove the dead voters first", voters(3, nil, 2, true), Change{Remove: "bao-2"}, -1, false},
		{"the last voter", "a change that leaves no voter is refused", voters(1, nil, 0, false), Change{Remove: "bao-0"}, -1, false},
		{"1: add a voter", "1 healthy of 2 voters is below a majority of 2", voters(1, nil, 0, false), Change{AddVoters: 1}, -1, false},
		{"1: promote a member observed healthy and caught up", "bug: a 1-member cluster could never grow to 3; 2 healthy of 2 keeps a majority", voters(1, nil, 0, false), Change{AddVoters: 1, AddHealthy: 1}, 0, true},
		{"3 with one unhealthy: promote a healthy member", "3 healthy of 4 keeps a majority of 3", voters(3, []int{1}, 0, false), Change{AddVoters: 1, AddHealthy: 1}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := Project(tc.c, tc.ch)
			g.Expect(p.Tolerance).To(Equal(tc.wantTol), tc.reason)
			ok, why := p.Allows()
			g.Expect(ok).To(Equal(tc.wantOK), tc.reason)
			if !ok {
				g.Expect(why).NotTo(BeEmpty())
			}
		})
	}
}

func TestLostQuorum(t *testing.T) {
	up := func(name string) Member {
		return Member{Name: name, PodExists: true, PodReady: true, Initialized: true, Version: "2.4.0"}
	}
	down := func(name string) Member { return Member{Name: name, PodExists: true} }
	three := []string{"bao-0", "bao-1", "bao-2"}
	for _, tc := range []struct {
		name    string
		c       Cluster
		voters  []string
		planned string
		lost    bool
		silent  []string
	}{
		{name: "autopilot readable: a majority exists", c: Cluster{AutopilotKnown: true, Members: []Member{down("bao-0"), down("bao-1"), up("bao-2")}}, voters: three},
		{name: "no autopilot, 2 of 3 answer (an election)", c: Cluster{Members: []Member{up("bao-0"), up("bao-1"), down("bao-2")}}, voters: three, silent: []string{"bao-2"}},
		{name: "no autopilot, 1 of 3 answers", c: Cluster{Members: []Member{down("bao-0"), up("bao-1"), down("bao-2")}}, voters: three, lost: true, silent: []string{"bao-0", "bao-2"}},
		{name: "the planned member and one more are silent", c: Cluster{Members: []Member{down("bao-0"), up("bao-1"), down("bao-2")}}, voters: three, planned: "bao-0", lost: true, silent: []string{"bao-0", "bao-2"}},
		{name: "a voter whose pod is gone counts as silent", c: Cluster{Members: []Member{up("bao-0")}}, voters: three, lost: true, silent: []string{"bao-1", "bao-2"}},
		{name: "the only voter, replaced on purpose, is planned", c: Cluster{Members: []Member{down("bao-0")}}, voters: []string{"bao-0"}, planned: "bao-0", silent: []string{"bao-0"}},
		{name: "no voters recorded yet: nothing to say", c: Cluster{Members: []Member{down("bao-0")}}},
		{name: "5 voters, 3 silent", c: Cluster{Members: []Member{up("bao-0"), up("bao-1"), down("bao-2"), down("bao-3"), down("bao-4")}},
			voters: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4"}, lost: true, silent: []string{"bao-2", "bao-3", "bao-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			q := LostQuorum(&tc.c, tc.voters, tc.planned)
			g.Expect(q.Lost).To(Equal(tc.lost))
			if !tc.c.AutopilotKnown && len(tc.voters) > 0 {
				g.Expect(q.Silent).To(Equal(tc.silent))
			}
		})
	}
}

func TestVoters(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Voters(&Cluster{})).To(BeNil(), "unknown without autopilot")
	c := &Cluster{AutopilotKnown: true, Members: []Member{{Name: "bao-1", InRaft: true, Voter: true}, {Name: "bao-0", InRaft: true}},
		Green: []Member{{Name: "bao-x-0", InRaft: true, Voter: true}}, Extra: []Member{{Name: "old", InRaft: true, Voter: true}}}
	g.Expect(Voters(c)).To(Equal([]string{"bao-1", "bao-x-0", "old"}))
}

func TestWatchQuorum(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	up := func(name string) Member {
		return Member{Name: name, PodExists: true, PodReady: true, Initialized: true, Version: "2.4.0"}
	}
	down := func(name string) Member { return Member{Name: name, PodExists: true} }
	three := []string{"bao-0", "bao-1", "bao-2"}
	readable := Cluster{Now: t0, AutopilotKnown: true, Members: []Member{
		{Name: "bao-0", InRaft: true, Voter: true}, {Name: "bao-1", InRaft: true, Voter: true}, {Name: "bao-2", InRaft: true}}}
	oneOfThree := Cluster{Now: t0, Members: []Member{down("bao-0"), up("bao-1"), down("bao-2")}}
	twoOfThree := Cluster{Now: t0, Members: []Member{up("bao-0"), up("bao-1"), down("bao-2")}}
	for _, tc := range []struct {
		name, reason string
		c            Cluster
		voters       []string
		since        *time.Time
		planned      string
		want         QuorumWatch
		wantText     string
	}{
		{name: "readable autopilot remembers its voters and clears the clock", reason: "the voters to count once autopilot goes silent",
			c: readable, voters: three, since: at(-5 * time.Second), want: QuorumWatch{LastVoters: []string{"bao-0", "bao-1"}}},
		{name: "an election (a majority answers) is no loss", reason: "autopilot is unreadable for a few seconds in every election",
			c: twoOfThree, voters: three, since: at(-5 * time.Second), want: QuorumWatch{LastVoters: three}},
		{name: "a loss starts its clock and holds", reason: "nothing may change while a majority is silent",
			c: oneOfThree, voters: three, wantText: "2 of 3 voters do not answer (bao-0, bao-2), a loss of quorum this upgrade did not plan: nothing is changed; break-glass in 10s",
			want: QuorumWatch{LastVoters: three, LostSince: at(0), Hold: true, RequeueAfter: 2 * time.Second, Silent: []string{"bao-0", "bao-2"}, Voters: three}},
		{name: "a loss within the grace keeps its start and holds", reason: "the grace counts from the first silent pass",
			c: oneOfThree, voters: three, since: at(-9 * time.Second), wantText: "break-glass in 1s",
			want: QuorumWatch{LastVoters: three, LostSince: at(-9 * time.Second), Hold: true, RequeueAfter: time.Second, Silent: []string{"bao-0", "bao-2"}, Voters: three}},
		{name: "a loss that lasted the grace is break-glass", reason: "invariant 7: an unplanned loss of quorum stops all automation",
			c: oneOfThree, voters: three, since: at(-10 * time.Second), wantText: "2 of 3 voters do not answer (bao-0, bao-2), a loss of quorum this upgrade did not plan for 10s or longer",
			want: QuorumWatch{LastVoters: three, LostSince: at(-10 * time.Second), BreakGlass: true, Silent: []string{"bao-0", "bao-2"}, Voters: three}},
		{name: "a loss that ended clears its clock", reason: "a short silence must not add up with a later one",
			c: twoOfThree, voters: three, since: at(-30 * time.Second), want: QuorumWatch{LastVoters: three}},
		{name: "the only voter replaced on purpose is no loss", reason: "a 1-member cluster's replacement is planned",
			c: Cluster{Now: t0, Members: []Member{down("bao-0")}}, voters: []string{"bao-0"}, planned: "bao-0", since: at(-time.Minute),
			want: QuorumWatch{LastVoters: []string{"bao-0"}}},
		{name: "no voters recorded yet: nothing to say", reason: "a cluster never read has no majority to lose",
			c: oneOfThree, want: QuorumWatch{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := WatchQuorum(&tc.c, tc.voters, tc.since, tc.planned, QuorumLossGrace, 2*time.Second)
			text := w.WaitingFor + w.Message
			w.WaitingFor, w.Message = "", ""
			g.Expect(w).To(Equal(tc.want), tc.reason)
			if tc.wantText != "" {
				g.Expect(text).To(ContainSubstring(tc.wantText), tc.reason)
			} else {
				g.Expect(text).To(BeEmpty(), tc.reason)
			}
		})
	}
}
