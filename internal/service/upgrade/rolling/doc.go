// Package rolling is the rolling-upgrade state machine: followers one at a time, the
// leader last after a verified step-down, each member gated on Raft health. It is pure:
// Decide reads one observation and the persisted intent and returns one action;
// Record writes the intent into status. The adminops reconciler performs the actions.
//
// One member, in order:
//
//  1. Plan: followers from the highest ordinal down, then the leader (Plan).
//  2. Safe point: if spec.upgrade.paused, hold here; otherwise check the quorum budget
//     (QuorumBudget) and persist the intent for the member (BeginStep).
//  3. Leader only: an executor Job steps it down; Decide verifies that autopilot names a
//     new leader that runs the target version, retrying after OpenBao's 10 s cooldown
//     at most MaxStepDownAttempts times.
//  4. Delete the member's pod, only while it still runs the old image: the StatefulSet
//     (OnDelete) re-creates it on the new template.
//  5. Gates (upgrade.MemberGates): Ready on the target image, unsealed, target version,
//     a voter again, healthy, caught up within maxLagEntries; then settleTime.
//  6. Record the member completed and go to the next; when none is left and every
//     member reports the target version, complete.
//
// Any step that does not finish within stepTimeout fails the upgrade, naming the
// member, what it waited for, and the members not started.
package rolling
