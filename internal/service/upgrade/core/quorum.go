package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// Change is a membership change to project: a voter that leaves (or goes down for a
// while), and how many voters are added.
type Change struct {
	// Remove is the node ID of a voter that leaves or is taken down; empty for none.
	Remove string
	// AddVoters counts new voters; each is assumed unhealthy until proven otherwise.
	AddVoters int
	// AddHealthy counts, among AddVoters, those observed healthy and caught up right
	// now (a non-voter about to be promoted after its gates passed).
	AddHealthy int
}

// Projection is what a membership change leaves.
type Projection struct {
	// Voters and Healthy count the voters before the change.
	Voters, Healthy int
	// VotersAfter and HealthyAfter count them after it.
	VotersAfter, HealthyAfter int
	// Tolerance is how many more healthy voters could fail after the change without
	// losing a majority; negative means the change itself loses it.
	Tolerance int
	// Unhealthy names the voters that are not healthy now, sorted.
	Unhealthy []string
}

// Project computes the failure tolerance after a change, over every voter of the
// Raft configuration (members with a pod and servers without one), assuming that a
// removed voter is gone and that every added voter is unhealthy (invariant 1: a new
// peer proves nothing until it is caught up) unless it was observed healthy and caught
// up (AddHealthy: without it a 1-member cluster could never grow, its second voter
// counted unhealthy leaving 1 healthy of 2). It is the one quorum arithmetic of
// every strategy and of scaling; tables spell out 3, 5, 7, 3+3 and 5+5 voters.
func Project(c *upgrade.Cluster, ch Change) Projection {
	var p Projection
	for _, m := range c.AllServers() {
		if !m.InRaft || !m.Voter {
			continue
		}
		p.Voters++
		if m.Healthy {
			p.Healthy++
		} else {
			p.Unhealthy = append(p.Unhealthy, m.Name)
		}
		if m.Name == ch.Remove {
			p.VotersAfter--
			if m.Healthy {
				p.HealthyAfter--
			}
		}
	}
	slices.Sort(p.Unhealthy)
	p.VotersAfter += p.Voters + ch.AddVoters
	p.HealthyAfter += p.Healthy + min(ch.AddHealthy, ch.AddVoters)
	p.Tolerance = p.HealthyAfter - (p.VotersAfter/2 + 1)
	return p
}

// Allows reports whether the change keeps a majority of healthy voters, and if not,
// why, in words for a status message.
func (p Projection) Allows() (bool, string) {
	if p.VotersAfter == 0 {
		return false, "the change would leave no voter"
	}
	if p.Tolerance < 0 {
		why := fmt.Sprintf("it would leave %d healthy of %d voters, below a majority of %d", p.HealthyAfter, p.VotersAfter, p.VotersAfter/2+1)
		if len(p.Unhealthy) > 0 {
			why += " (not healthy now: " + strings.Join(p.Unhealthy, ", ") + ")"
		}
		return false, why
	}
	return true, ""
}

// QuorumLoss is what a pass can say about quorum when autopilot cannot be read.
type QuorumLoss struct {
	// Lost is true when fewer than a majority of the voters answer.
	Lost bool
	// Voters are the voters it counted; Silent those of them that do not answer.
	Voters, Silent []string
}

// LostQuorum reports whether a majority of the voters is unhealthy or missing, which
// the upgrade did not plan: only when autopilot cannot be read (a cluster with a
// readable autopilot has a leader, so a majority), over the voters last read from it
// (lastVoters), a voter counting as healthy when it answers sys/health unsealed with
// a Ready pod. planned is the member the current step takes down on purpose (the
// only voter of a 1-member cluster, replaced); a loss with no other silent voter is
// planned and not reported.
func LostQuorum(c *upgrade.Cluster, lastVoters []string, planned string) QuorumLoss {
	if c.AutopilotKnown || len(lastVoters) == 0 {
		return QuorumLoss{}
	}
	q := QuorumLoss{Voters: slices.Clone(lastVoters)}
	for _, v := range lastVoters {
		if m := c.Member(v); m == nil || !m.Responsive() {
			q.Silent = append(q.Silent, v)
		}
	}
	unplanned := slices.ContainsFunc(q.Silent, func(v string) bool { return v != planned })
	q.Lost = unplanned && len(q.Voters)-len(q.Silent) < len(q.Voters)/2+1
	return q
}

// Voters are the voters of this pass's autopilot read, sorted; nil when it could
// not be read.
func Voters(c *upgrade.Cluster) []string {
	if !c.AutopilotKnown {
		return nil
	}
	var out []string
	for _, m := range c.AllServers() {
		if m.InRaft && m.Voter {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}
