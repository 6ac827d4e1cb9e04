// Package bluegreen is the blue-green phase machine. It is pure: Decide reads the
// persisted status and one observation of the cluster and returns the next status
// and one core.Action; the adminops reconciler writes the status and carries out
// the action. It never imports the rolling strategy.
//
// A pass either records an intent (core.KindPersist: a phase entered, a step
// begun, an attempt counted) or acts on the intent already recorded (create
// green's StatefulSet, the Job of the current step, switch the client Service,
// delete blue), never both. So every action is named by status written before it,
// is idempotent, and after a crash the next pass sees the same intent and the
// world, and resolves the intent by observation.
//
//  1. Start: record blue (StatefulSet, image and version as the running pods
//     report them, revision) and green (<name>-<operation ID>, target image and
//     version) before anything is created.
//  2. DeployGreen: create green's StatefulSet; its members start on fresh volumes
//     with fresh node IDs (their pod names) and join blue's cluster as permanent
//     non-voters (retry_join_as_non_voter), which autopilot never promotes.
//  3. Sync: every green member healthy, a non-voter, within maxLagEntries of the
//     leader, without a break, for minSyncDuration.
//  4. Validate: the validation hook Job, when one is set; a failure holds the
//     upgrade with the Job's name and how to read its logs.
//  5. AwaitPromotion: hold for baokeeper.dev/promote unless autoPromote.
//  6. PromoteGreen: one green member at a time promoted by an executor Job,
//     verified a voter in the Raft view, within the quorum budget.
//  7. DemoteBlue: every blue voter but the leader demoted, verified.
//  8. TransferLeadership: one step-down of the blue leader; the only voters that
//     can succeed it are green. The new leader verified green and on the target:
//     the point of no return (status.blueGreen.leaderMovedAt).
//  9. Cutover: status.statefulSet moves to green, and the client Service follows.
//  10. RemoveBlue: every blue peer removed from Raft by remove-peer, verified.
//  11. Cleanup: blue's StatefulSet deleted, then its volumes (data of removed peers
//     that must never rejoin; each goes once its pod has terminated); then
//     currentVersion and the cleared status in one write.
//
// Every phase that waits on the cluster is bounded by phaseTimeout; every executor
// Job step by maxJobFailures attempts. A failure keeps what was done and waits for
// baokeeper.dev/retry.
package bluegreen
