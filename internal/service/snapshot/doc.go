// Package snapshot takes the pre-upgrade Raft snapshot: an executor Job streams it
// from the leader to S3-compatible object storage and verifies the upload, and the
// controller records a receipt before anything of the cluster changes.
//
// The controller's side is pure: Decide reads the persisted upgrade status, the
// policy and one observation of the current attempt's Job, and returns one action;
// Record writes it into status. The executor's side (Upload) runs in the Job.
//
//  1. Policy Never: nothing to do. IfOlderThan: a receipt in status.lastSnapshot
//     younger than maxAge, for the same bucket and prefix, is reused.
//  2. Safe point: if spec.upgrade.paused, hold here; otherwise persist the intent
//     (currentStep.action TakeSnapshot).
//  3. Start attempt N: a Job with a deterministic name (JobName) whose
//     object key is derived from the upgrade and the attempt, so a Job created
//     twice (after a crash) is the same Job.
//  4. In the Job: find the leader (a 2.4 standby answers a snapshot with a
//     redirect), stream the snapshot through a SHA-256 hash into a multipart upload,
//     check that the archive is complete, then read the object back and compare
//     size and SHA-256. The receipt goes to the termination message.
//  5. The controller reads the receipt from the Job's pod and records it in
//     status.upgrade.snapshot and status.lastSnapshot, in one status write; only
//     then does the rolling state machine start.
//  6. A failed attempt is retried after RetryDelay, at most MaxAttempts times; then
//     the upgrade fails with reason SnapshotFailed and the Job's message, before any
//     member was touched. The baokeeper.dev/retry annotation grants new attempts.
package snapshot
