package openbao

import "time"

// Health is one member's answer to sys/health.
type Health struct {
	// Initialized is true once the cluster has been initialized.
	Initialized bool
	// Sealed is true while the member is sealed and cannot serve requests.
	Sealed bool
	// Standby is true when the member is unsealed but not the active node.
	Standby bool
	// Version is the full OpenBao version of the member, including any
	// prerelease suffix (for example "2.4.0" or "2.4.0-beta1").
	Version string
	// ClusterID is the cluster's ID; empty while sealed or uninitialized.
	ClusterID string
	// ClusterName is the cluster's name; empty while sealed or uninitialized.
	ClusterName string
	// Certificate is the certificate the member presented on the connection that
	// answered; nil when the answer came over a connection without one.
	Certificate *ServedCertificate
	// ServerTime is the member's clock when it answered, in whole seconds
	// (server_time_utc); zero when it did not say. AskedAt and AnsweredAt are the
	// client's clock around the request: together they tell how far the member's
	// clock is off.
	ServerTime          time.Time
	AskedAt, AnsweredAt time.Time
}

// ServedCertificate is what a member's listener presents: the certificate a client
// sees, whatever the Secret holds now.
type ServedCertificate struct {
	// SHA256 is the SHA-256 of its DER, hex-encoded.
	SHA256 string
	// NotAfter is when it expires.
	NotAfter time.Time
}

// Leader is the answer to sys/leader from whichever member the Service
// routed the request to.
type Leader struct {
	// IsSelf is true when the member that answered is the active node. Since
	// the request goes through the Service, this says nothing about any
	// particular pod.
	IsSelf bool
	// LeaderAddress is the API address the active node advertises; empty when
	// there is no active node.
	LeaderAddress string
	// LeaderClusterAddress is the cluster (Raft) address the active node
	// advertises.
	LeaderClusterAddress string
	// RaftCommittedIndex is the Raft committed index seen by the answering
	// member.
	RaftCommittedIndex uint64
	// RaftAppliedIndex is the Raft applied index seen by the answering member.
	RaftAppliedIndex uint64
}

// Replication is what one member's own metrics say about the Raft replication it
// received: how many AppendEntries RPCs (heartbeats among them) its Raft handled
// since its process started. Only a leader sends them, so a count above zero proves
// that the leader's Raft reached this process: the proof autopilot's last_contact
// cannot give, since it counts the member's own echoes to the active node, sent in
// the other direction.
type Replication struct {
	// AppendEntries is the count; zero when the series is absent (none handled since
	// the process started, or none for the metrics' retention time).
	AppendEntries uint64
}

// RaftConfiguration is the Raft peer set from
// sys/storage/raft/configuration.
type RaftConfiguration struct {
	// Servers are the Raft peers in the order OpenBao returned them.
	Servers []RaftServer
}

// RaftServer is one Raft peer.
type RaftServer struct {
	// NodeID is the peer's Raft node ID.
	NodeID string
	// Address is the peer's cluster address (host:port).
	Address string
	// Leader is true for the current Raft leader.
	Leader bool
	// Voter is true when the peer votes in elections.
	Voter bool
}

// Autopilot server statuses as reported in AutopilotServer.Status.
const (
	// AutopilotStatusLeader marks the Raft leader.
	AutopilotStatusLeader = "leader"
	// AutopilotStatusVoter marks a voting follower.
	AutopilotStatusVoter = "voter"
	// AutopilotStatusNonVoter marks a non-voting peer.
	AutopilotStatusNonVoter = "non-voter"
)

// AutopilotState is the autopilot view of the Raft cluster from
// sys/storage/raft/autopilot/state.
type AutopilotState struct {
	// Healthy is true when autopilot considers every server healthy.
	Healthy bool
	// FailureTolerance is how many voters can fail without losing quorum.
	FailureTolerance int
	// Leader is the node ID of the Raft leader.
	Leader string
	// Voters are the node IDs of the voting servers.
	Voters []string
	// NonVoters are the node IDs of the non-voting servers.
	NonVoters []string
	// Servers are keyed by node ID.
	Servers map[string]AutopilotServer
}

// AutopilotServer is autopilot's view of one Raft server.
type AutopilotServer struct {
	// ID is the Raft node ID.
	ID string
	// Name is the server's name; usually equal to ID.
	Name string
	// Address is the cluster address (host:port).
	Address string
	// NodeStatus is the membership status, for example "alive" or "left".
	NodeStatus string
	// Status is one of AutopilotStatusLeader, AutopilotStatusVoter or
	// AutopilotStatusNonVoter.
	Status string
	// NodeType is the Raft node type, for example "voter".
	NodeType string
	// Version is the OpenBao version the server reports to autopilot.
	// Autopilot omits any prerelease suffix ("2.4.0" for "2.4.0-beta1"), so
	// strip the prerelease from Health.Version before comparing the two.
	Version string
	// LastIndex is the last Raft index the server has.
	LastIndex uint64
	// LastTerm is the last Raft term the server has seen.
	LastTerm uint64
	// Healthy is autopilot's verdict on this server.
	Healthy bool
	// LastContact is the time since the leader last heard from the server.
	LastContact time.Duration
	// StableSince is when the server last became healthy; zero if unknown.
	StableSince time.Time
}

// JustAfterElection reports whether an autopilot read is the one OpenBao gives right
// after a leader change: every server but the leader listed as "left" with index 0,
// for a few seconds, until the new leader heard from them. Such a read says nothing
// about the other servers and is not acted on (invariant 9). A single server left
// with index 0 while others answer is not that: it is a dead voter (a StatefulSet
// scaled down by hand, say), which must be seen as one so it can be removed.
func JustAfterElection(st *AutopilotState) bool {
	others := 0
	for id, s := range st.Servers {
		if id == st.Leader {
			continue
		}
		others++
		if s.NodeStatus != "left" || s.LastIndex != 0 {
			return false
		}
	}
	return others > 0
}
