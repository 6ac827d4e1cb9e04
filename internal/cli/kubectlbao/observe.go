package kubectlbao

import (
	"strconv"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Voters is status.voters ("<healthy voters>/<voters>") parsed, with the failure
// tolerance Raft derives from it.
type Voters struct {
	// Known is false when status.voters is empty or does not parse: the operator
	// could not read autopilot.
	Known bool
	// Healthy and Total are the healthy voters and all voters.
	Healthy, Total int
}

// VotersOf is the voters of a cluster's status: status.raft's counts, or status.voters
// parsed for a status written before status.raft existed (when it counted voters).
func VotersOf(st *baov1.OpenBaoClusterStatus) Voters {
	if r := st.Raft; r != nil {
		return Voters{Known: true, Healthy: int(r.HealthyVoters), Total: int(r.Voters)}
	}
	return ParseVoters(st.Voters)
}

// ParseVoters parses status.voters.
func ParseVoters(s string) Voters {
	h, t, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Voters{}
	}
	healthy, err1 := strconv.Atoi(h)
	total, err2 := strconv.Atoi(t)
	if err1 != nil || err2 != nil || healthy < 0 || total < 0 || healthy > total {
		return Voters{}
	}
	return Voters{Known: true, Healthy: healthy, Total: total}
}

// Quorum is the majority of the voters.
func (v Voters) Quorum() int { return v.Total/2 + 1 }

// FailureTolerance is how many more healthy voters may fail before the cluster loses
// its quorum: healthy voters minus the majority, as autopilot computes it, and 0
// when the quorum is already lost (QuorumLost then says so). The status carries no
// failure tolerance of its own; this is the same number derived from status.voters.
func (v Voters) FailureTolerance() int {
	if ft := v.Healthy - v.Quorum(); ft > 0 {
		return ft
	}
	return 0
}

// QuorumLost reports whether fewer than a majority of voters are healthy.
func (v Voters) QuorumLost() bool { return v.Known && v.Total > 0 && v.Healthy < v.Quorum() }

// Observation is the operation.Cluster that the status describes, for the operator's
// pure planners and verdicts: the members of status.members split into the serving
// StatefulSet's, green's (during a blue-green upgrade) and the rest, with their Raft
// role and health; the leader; autopilot's verdict as status.voters reports it.
//
// Status says less than the operator observes: a member's Ready stands for
// initialized and unsealed (the readiness probe's meaning), and the Raft indexes are
// unknown. Every verdict built on it is therefore "as far as status shows".
func Observation(c *baov1.OpenBaoCluster, now time.Time) *operation.Cluster {
	v := VotersOf(&c.Status)
	obs := &operation.Cluster{
		Now:              now,
		Leader:           c.Status.Leader,
		AutopilotKnown:   v.Known,
		AutopilotHealthy: v.Known && v.Total > 0 && v.Healthy == v.Total,
		FailureTolerance: v.FailureTolerance(),
	}
	serving := c.ServingStatefulSet()
	green := ""
	if bg := c.Status.BlueGreen; bg != nil {
		green = bg.Green.StatefulSet
	}
	for _, ms := range c.Status.Members {
		set, ord := splitOrdinal(ms.Name)
		m := operation.Member{
			Name: ms.Name, Ordinal: ord,
			PodExists: true, PodReady: ms.Ready, Image: ms.Image,
			Initialized: ms.Ready, Sealed: !ms.Ready, Version: ms.Version,
			InRaft:  ms.RaftRole == baov1.RaftRoleLeader || ms.RaftRole == baov1.RaftRoleVoter || ms.RaftRole == baov1.RaftRoleNonVoter,
			Voter:   ms.RaftRole == baov1.RaftRoleLeader || ms.RaftRole == baov1.RaftRoleVoter,
			Healthy: ms.Healthy,
		}
		if obs.Leader == "" && ms.RaftRole == baov1.RaftRoleLeader {
			obs.Leader = ms.Name
		}
		switch {
		case set == serving && ord >= 0:
			obs.Members = append(obs.Members, m)
		case green != "" && set == green && ord >= 0:
			obs.Green = append(obs.Green, m)
		default:
			m.PodExists = false
			obs.Extra = append(obs.Extra, m)
		}
	}
	operation.SortMembers(obs.Members)
	operation.SortMembers(obs.Green)
	return obs
}

// splitOrdinal splits a pod name <statefulSet>-<ordinal>; the ordinal is -1 when
// the name has none.
func splitOrdinal(name string) (string, int) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return name, -1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 {
		return name, -1
	}
	return name[:i], n
}
