// Package scaling is the membership state machine: it changes the number of members
// of a cluster through Raft, one member at a time, within the quorum budget of
// core.Project. It is pure; the adminops reconciler observes, calls Decide, records
// the decision with Record and performs the one action.
//
// A scaling operation, in order:
//
//  1. It starts when spec.replicas differs from the StatefulSet's replicas, when a
//     Raft server matches no member (a voter left behind by a StatefulSet scaled down
//     by hand), or when a member is in Raft as a non-voter; never while an upgrade
//     holds the operation lock, and the reverse.
//  2. Removals come first, highest ordinal first, then Raft servers without a member:
//     a member that leads steps down first (an executor Job; the step goes on once
//     another member leads), then an executor Job demotes it and removes it from the
//     Raft configuration, verified by reading the configuration back; only then does
//     the StatefulSet's replicas drop, so its pod goes. Its volume is kept.
//  3. Then members that are in Raft as caught-up non-voters are promoted.
//  4. Then members are added at the next ordinal: a volume left by a member that was
//     removed from Raft is deleted first (that data must never rejoin), the
//     StatefulSet's replicas grow by one, the new member joins as a non-voter
//     (retry_join_as_non_voter), and once it is healthy and within maxLagEntries of
//     the leader an executor Job promotes it, verified in the Raft configuration.
//  5. Each Job is retried after OpenBao's 10 s cooldown, at most 3 times until a
//     retry annotation; a step that does not finish within its timeout fails, naming
//     the member and what is done.
//  6. Every decision is recorded in status.scaling before its action, and every
//     action is idempotent, so a crash at any point resumes from what is observed.
package scaling
