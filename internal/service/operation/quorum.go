package operation

import (
	"fmt"
	"slices"
	"strings"
	"time"
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
	// UnhealthyWords is Unhealthy for a status message (Cluster.Names).
	UnhealthyWords string
}

// Project computes the failure tolerance after a change, over every voter of the
// Raft configuration (members with a pod and servers without one), assuming that a
// removed voter is gone and that every added voter is unhealthy (invariant 1: a new
// peer proves nothing until it is caught up) unless it was observed healthy and caught
// up (AddHealthy: without it a 1-member cluster could never grow, its second voter
// counted unhealthy leaving 1 healthy of 2). It is the one quorum arithmetic of
// every strategy and of scaling; tables spell out 3, 5, 7, 3+3 and 5+5 voters.
func Project(c *Cluster, ch Change) Projection {
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
	p.UnhealthyWords = c.Names(p.Unhealthy)
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
			why += " (not healthy now: " + p.UnhealthyWords + ")"
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
func LostQuorum(c *Cluster, lastVoters []string, planned string) QuorumLoss {
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
func Voters(c *Cluster) []string {
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

// QuorumLossGrace is how long a loss of quorum that an upgrade did not plan lasts
// before break-glass: long enough that one slow health read does not stop the
// cluster's automation, short enough that nothing else happens meanwhile (every
// strategy waits on autopilot, which cannot be read without a majority).
const QuorumLossGrace = 10 * time.Second

// QuorumWatch is what the upgrade records about quorum after one pass, and whether
// it must stop or enter break-glass.
type QuorumWatch struct {
	// LastVoters and LostSince are the new values of status.upgrade.lastVoters and
	// status.upgrade.quorumLostSince.
	LastVoters []string
	LostSince  *time.Time
	// Hold is true while an unplanned loss lasts less than the grace: nothing may
	// change, and the pass ends with WaitingFor, again after RequeueAfter.
	Hold         bool
	WaitingFor   string
	RequeueAfter time.Duration
	// BreakGlass is true once the loss lasted the grace; Message says why.
	BreakGlass bool
	Message    string
	// Silent are the voters that do not answer.
	Silent, Voters []string
}

// WatchQuorum debounces LostQuorum over passes: the voters of a readable autopilot
// are remembered; a loss that this upgrade did not plan holds every change at once and
// becomes break-glass once it lasted grace (a loss that ends sooner clears its clock).
// lostSince is the persisted start of the loss; poll bounds the requeue.
func WatchQuorum(c *Cluster, lastVoters []string, lostSince *time.Time, planned string, grace, poll time.Duration) QuorumWatch {
	if v := Voters(c); v != nil {
		return QuorumWatch{LastVoters: v}
	}
	w := QuorumWatch{LastVoters: lastVoters}
	q := LostQuorum(c, lastVoters, planned)
	if !q.Lost {
		return w
	}
	w.Silent, w.Voters = q.Silent, q.Voters
	what := fmt.Sprintf("%d of %d voters do not answer (%s), a loss of quorum this upgrade did not plan", len(q.Silent), len(q.Voters), strings.Join(q.Silent, ", "))
	since := c.Now
	if lostSince != nil {
		since = *lostSince
	}
	w.LostSince = &since
	if lasted := c.Now.Sub(since); lasted < grace {
		w.Hold = true
		w.WaitingFor = fmt.Sprintf("%s: nothing is changed; break-glass in %s unless they answer again", what, (grace - lasted).Round(time.Second))
		w.RequeueAfter = min(grace-lasted, poll)
		return w
	}
	w.BreakGlass = true
	w.Message = what + " for " + grace.String() + " or longer"
	return w
}
