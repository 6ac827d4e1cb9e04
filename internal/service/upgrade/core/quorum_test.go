package core

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// voters builds a cluster of n voters bao-0..n-1, with the given ones unhealthy, and
// extra Raft servers without pods (x-0.., each unhealthy when extraUnhealthy).
func voters(n int, unhealthy []int, extra int, extraUnhealthy bool) *upgrade.Cluster {
	c := &upgrade.Cluster{}
	for i := range n {
		m := upgrade.Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, InRaft: true, Voter: true, Healthy: true}
		for _, u := range unhealthy {
			if u == i {
				m.Healthy = false
			}
		}
		c.Members = append(c.Members, m)
	}
	for i := range extra {
		c.Extra = append(c.Extra, upgrade.Member{Name: fmt.Sprintf("x-%d", i), InRaft: true, Voter: true, Healthy: !extraUnhealthy})
	}
	return c
}

func TestProject(t *testing.T) {
	cases := []struct {
		name, reason string
		c            *upgrade.Cluster
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
