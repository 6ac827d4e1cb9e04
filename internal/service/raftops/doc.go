// Package raftops is the executor side of Raft operations: the procedures
// an executor Job runs with the mutating executor role, that is finding the
// active node, the leadership transfer and the membership changes (promote,
// demote and remove, each verified), and Classify, which says what to do
// about a failure. The strategies decide when a Job runs, package
// executorjob builds the Job; this package does what the Job does.
//
// It has no OpenBao client of its own. The procedures take the role
// interfaces of package openbao (internal/platform/openbao): FindActive an
// openbao.MemberReader, TransferLeadership an openbao.Leadership, and
// PromoteMember, DemoteMember and RemoveMember an openbao.Membership; the
// executor passes the openbao.MemberClient it builds. That client owns TLS,
// the login, the token cache, the requests and the errors that describe
// OpenBao's answers (openbao.ErrNotActive, openbao.ErrNotNonVoter,
// openbao.ErrAlreadyNonVoter, openbao.ErrIncompleteSnapshot, ...); this
// package adds the errors of the procedures (ErrAlreadyMoved, ErrNoLeader,
// ErrLeaderUnchanged, ErrNotJoined, ErrRemovingLeader, ErrDemotingLeader,
// ErrNotApplied) and sorts both kinds with Classify.
//
// A leadership transfer (TransferLeadership), in order:
//
//  1. Find the active node: ask sys/leader of the members in order until one
//     names an active node (leader_address), map that address back to the
//     member address the caller gave, and confirm it on the node itself
//     (is_self, or sys/health not standby). A stale answer is not trusted.
//  2. If the active node is not the expected leader (node ID = pod name = the
//     first DNS label of its address), stop: the result is benign and nothing
//     is stepped down.
//  3. The client logs in to the JWT auth method (auth/<workload.AuthMount>/login,
//     role workload.ExecutorRole, as the executor configures it) with the
//     projected service-account token, read again from its file on every
//     login; it caches the client token until 80% of its TTL and logs in
//     again once if a request is refused with 403.
//  4. Send sys/step-down to the active node's own address, never through a
//     Service and never following a redirect: OpenBao forwards a standby's
//     step-down to whichever node is active.
//  5. Poll sys/leader (every 500 ms, for at most 30 s) until another node is
//     confirmed active, and return its node ID.
//  6. Sort failures with Classify: benign (leadership already moved),
//     retryable (an election in progress, 500 "local node not active", 5xx,
//     refused or reset connections, timeouts, no new leader yet) or fatal
//     (403, 400, TLS verification, bad input). Retry retryable ones within
//     Options.RetryFor, never stepping the same node down twice within
//     OpenBao's 10 s cooldown.
//
// Leader discovery (step 1) and the retry loop (step 6) are shared with the
// membership operations below.
//
// Promoting a member (PromoteMember), in order:
//
//  1. Find the active node as in step 1 above, and read
//     sys/storage/raft/configuration from it.
//  2. If the member's node ID is not in the configuration, stop with
//     ErrNotJoined (fatal): it has not joined. If it is a voter, stop: the
//     result is benign and nothing is sent.
//  3. Send sys/storage/raft/promote {server_id} to the active node. An answer
//     "server is not a non-voter" (openbao.ErrNotNonVoter) is no failure: the
//     node is not on autopilot's permanent non-voter list, and only the
//     configuration says whether it votes.
//  4. Poll the configuration on the active node (every 500 ms, for at most
//     30 s) until the member is a voter: autopilot applies a promotion 3-5 s
//     after the request. A read that fails or names another leader sends the
//     poll back to step 1 for the active node. A wait that ends first is
//     ErrNotApplied (retryable) and names what was seen last.
//  5. Retry retryable failures within MembershipOptions.RetryFor from step 1;
//     every step is idempotent.
//
// Removing a member (RemoveMember), in order:
//
//  1. Find the active node and read the configuration from it, as above.
//  2. If the member is the active node, stop with ErrRemovingLeader (fatal):
//     demoting a leader is not a leadership transfer and ends in an
//     uncontrolled election; it must step down first. If the member is not in
//     the configuration, stop: the result is benign.
//  3. If it is a voter, send sys/storage/raft/demote {server_id} to the
//     active node ("server is already a non-voter",
//     openbao.ErrAlreadyNonVoter, is no failure) and poll until its voter flag
//     clears (at most 45 s; autopilot takes 9-10 s).
//  4. Send sys/storage/raft/remove-peer {server_id} to the active node and
//     poll until the member is gone (at most 15 s).
//  5. Throughout, follow an election to the new active node; if the member
//     becomes it, stop as in step 2. Retry as for PromoteMember.
//
// Demoting a member (DemoteMember) is steps 1 to 3 of RemoveMember, and the
// member stays in the configuration: a member that is absent or a non-voter
// already is a benign result, and the active node is refused with
// ErrDemotingLeader (fatal), also when an election makes it the leader.
//
// The openbao client verifies TLS against the cluster CA alone (optionally for
// a fixed server name, so that a member can be addressed by IP), ignores BAO_*
// environment variables, never follows a redirect, and never puts a token
// into a log line or an error; see docs/design/openbao-client.md.
package raftops
