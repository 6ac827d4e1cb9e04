package openbaocluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// raftView is the Raft truth of one pass, from the members' sys/health (which one is
// active) and autopilot state (roles and health of every server, including servers
// that have no pod). Invariant 11: Available means a known leader and a quorum of
// healthy voters, not Ready pods.
type raftView struct {
	// ap is autopilot state; nil when it could not be read or was read right after
	// an election (servers briefly listed as "left" with index 0), why says which.
	ap  *openbao.AutopilotState
	why string
	// active is a member whose sys/health says it is the active node.
	active string
	// leader is autopilot's leader, or the active member when autopilot is unknown.
	leader string
	// clocks are the members' clock offsets (operation.ClockOffset) beyond the
	// tolerance, from their sys/health.
	clocks map[string]time.Duration
}

func newRaftView(obs *observation) raftView {
	v := raftView{ap: obs.autopilot, why: obs.autopilotErr, clocks: map[string]time.Duration{}}
	names := make([]string, 0, len(obs.health))
	for name, h := range obs.health {
		names = append(names, name)
		if d := operation.ClockOffset(h.ServerTime, h.AskedAt, h.AnsweredAt); d != 0 {
			v.clocks[name] = d
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if h := obs.health[name]; h.Initialized && !h.Sealed && !h.Standby {
			v.active = name
			break
		}
	}
	if v.ap != nil && openbao.JustAfterElection(v.ap) {
		v.ap, v.why = nil, "autopilot state was read right after an election"
	}
	v.leader = v.active
	if v.ap != nil && v.ap.Leader != "" {
		v.leader = v.ap.Leader
	}
	if v.why == "" && v.ap == nil {
		v.why = "no member could be read"
	}
	return v
}

// role is a member's Raft role and autopilot health.
func (v raftView) role(name string) (baov1.RaftRole, bool) {
	if v.ap == nil {
		return baov1.RaftRoleUnknown, false
	}
	s, ok := v.ap.Servers[name]
	if !ok {
		return baov1.RaftRoleNotInConfiguration, false
	}
	switch s.Status {
	case openbao.AutopilotStatusLeader:
		return baov1.RaftRoleLeader, s.Healthy
	case openbao.AutopilotStatusVoter:
		return baov1.RaftRoleVoter, s.Healthy
	default:
		return baov1.RaftRoleNonVoter, s.Healthy
	}
}

// voterCounts counts every voter of the configuration (with or without a pod) and
// the healthy ones, and names the unhealthy ones in order.
func (v raftView) voterCounts() (voters, healthy int, unhealthy []string) {
	for id, s := range v.ap.Servers {
		if s.Status != openbao.AutopilotStatusLeader && s.Status != openbao.AutopilotStatusVoter {
			continue
		}
		voters++
		if s.Healthy {
			healthy++
		} else {
			unhealthy = append(unhealthy, id)
		}
	}
	slices.Sort(unhealthy)
	return voters, healthy, unhealthy
}

// voters is status.voters: "<healthy voters>/<desired>", where desired is the
// larger of the members the spec asks for and the voters in the configuration, so
// that a member that does not vote (1/3) and a voter without a member (3/5) both
// show; "" when unknown.
func (v raftView) voters(desired int32) string {
	if v.ap == nil {
		return ""
	}
	n, h, _ := v.voterCounts()
	return fmt.Sprintf("%d/%d", h, max(int(desired), n))
}

// counts is status.raft; nil when the Raft view is unknown.
func (v raftView) counts() *baov1.RaftStatus {
	if v.ap == nil {
		return nil
	}
	n, h, _ := v.voterCounts()
	return &baov1.RaftStatus{Voters: int32(n), HealthyVoters: int32(h), NonVoters: int32(len(v.ap.Servers) - n),
		FailureTolerance: int32(max(h-(n/2+1), 0))}
}

// toleranceShortfall says why Raft tolerates fewer failed voters than a cluster of
// members promises ((len(members)-1)/2) because a member does not vote: a non-voter,
// or a member missing from the configuration (the unhealthy voters are named too).
// It is "" when every member votes, the promise holds, or the Raft view is unknown.
//
// A voter that autopilot reports unhealthy on a Ready pod does not count on its own
// (issue 39 asks that it does): tried, the phase stayed Degraded for over 30 s after a
// rollout's last election on the rig, longer than autopilot's known tail after an
// election (docs/design/autopilot-tail.md); it needs a debounce that tells that tail
// from a member that stays unhealthy, which is not built yet.
func (v raftView) toleranceShortfall(members []string) string {
	if v.ap == nil || len(members) == 0 {
		return ""
	}
	var nonVoters, missing []string
	for _, name := range members {
		s, ok := v.ap.Servers[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case s.Status != openbao.AutopilotStatusLeader && s.Status != openbao.AutopilotStatusVoter:
			nonVoters = append(nonVoters, name)
		}
	}
	if len(nonVoters)+len(missing) == 0 {
		return ""
	}
	n, h, unhealthy := v.voterCounts()
	promised, tolerance := (len(members)-1)/2, h-(n/2+1)
	if tolerance >= promised {
		return ""
	}
	var why []string
	if len(nonVoters) > 0 {
		what := "is a non-voter"
		if len(nonVoters) > 1 {
			what = "are non-voters"
		}
		why = append(why, fmt.Sprintf("%s %s (baokeeper promotes a non-voter once it has been healthy and caught up for %s)",
			strings.Join(nonVoters, ", "), what, operation.NonVoterPromoteAfter))
	}
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("%s %s not in the Raft configuration", strings.Join(missing, ", "), isAre(len(missing))))
	}
	var sick, strangers []string
	for _, id := range unhealthy {
		if slices.Contains(members, id) {
			sick = append(sick, id)
		} else {
			strangers = append(strangers, id)
		}
	}
	if len(sick) > 0 {
		why = append(why, fmt.Sprintf("%s %s not healthy", v.names(sick), isAre(len(sick))))
	}
	if len(strangers) > 0 {
		what := "a voter that is no member of the cluster and is not healthy"
		if len(strangers) > 1 {
			what = "voters that are no member of the cluster and are not healthy"
		}
		why = append(why, fmt.Sprintf("%s %s %s (baokeeper removes a voter without a member)", strings.Join(strangers, ", "), isAre(len(strangers)), what))
	}
	return fmt.Sprintf("Raft tolerates the loss of %d voters, but a %d-member cluster promises %d: %s",
		max(tolerance, 0), len(members), promised, strings.Join(why, "; "))
}

// names joins member names, each member whose clock is off followed by how far.
func (v raftView) names(list []string) string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = n + operation.ClockSays(v.clocks[n])
	}
	return strings.Join(out, ", ")
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// availability is the Available condition's reason and message once a majority of
// pods is Ready: no active node, or fewer healthy voters than a majority, is not
// available, whatever the pods say.
func (v raftView) availability(ready, replicas int32) (baov1.Reason, string) {
	if v.active == "" {
		return baov1.ReasonNoLeader, fmt.Sprintf("%d of %d members are Ready, but none is the active node: Raft has no leader, so the cluster cannot serve. "+
			"Check status.members[].raftRole and the members' logs; voters that left without going through Raft (a StatefulSet scaled by hand) leave the rest without a majority", ready, replicas)
	}
	if v.ap == nil {
		return baov1.ReasonLeaderActive, fmt.Sprintf("%s is the active node; the Raft view could not be read (%s)", v.active, v.why)
	}
	n, h, unhealthy := v.voterCounts()
	if q := n/2 + 1; h < q {
		return baov1.ReasonQuorumLost, fmt.Sprintf("only %d of %d Raft voters are healthy (not healthy: %s); a majority needs %d",
			h, n, v.names(unhealthy), q)
	}
	return baov1.ReasonQuorumReady, fmt.Sprintf("%s leads; %d of %d voters are healthy (a majority is %d)", v.leader, h, n, n/2+1)
}
