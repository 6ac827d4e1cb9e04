// Package raftops is the executor side of Raft operations: the small Client
// over the OpenBao API that executor Jobs use with the mutating executor role,
// the leadership transfer built on it, and the pure builders of the Jobs that
// run it. The strategies decide when a Job runs; this package does what the
// Job does.
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
//  3. Log in to the JWT auth method (auth/<workload.AuthMount>/login, role
//     workload.ExecutorRole) with the projected service-account token, read
//     again from its file on every login; cache the client token until 80% of
//     its TTL and log in again once if a request is refused with 403.
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
// The Client verifies TLS against the cluster CA alone (optionally for a
// fixed server name, so that a member can be addressed by IP), ignores BAO_*
// environment variables, and never puts a token into a log line or an error.
//
// The Job builders are pure: StepDownJob returns the executor Job of one
// member and attempt under a deterministic name (StepDownJobName), and
// JobPhaseOf reads a Job's terminal conditions back as a upgrade.JobPhase.
package raftops
