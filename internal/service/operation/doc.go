// Package core holds what every upgrade strategy shares: the closed set of actions
// a strategy returns (Action), the quorum projection, the upgrade's metrics
// bookkeeping (RecordUpgrade, from the status before and after a pass) and the
// per-cluster operation lock. It is pure: functions change a status in memory; the caller writes it once
// per pass through statusapply.
//
//  1. An operation (a rolling upgrade, later a blue-green upgrade or a restore) takes
//     the lock when its prechecks pass, before its first action, in the same status
//     write as that intent.
//  2. While another operation holds it, the OperationLock precheck fails, naming the
//     holder, and nothing is touched.
//  3. The operation releases it in the status write that ends it (completed or
//     cancelled). A failed operation keeps it: the cluster is in the middle of
//     something a person must finish or retry.
package operation
