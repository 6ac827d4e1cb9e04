// Package statusapply is the one way an OpenBaoCluster's status is written.
//
//  1. The reconciler keeps a copy of the status it read at the start of the pass.
//  2. It computes the whole new status in memory (condition setters, phase, message).
//  3. In a deferred call it hands both to Apply, which skips the write when the two
//     are semantically equal (no write, no event, no watch traffic when idle).
//  4. Otherwise Apply sends the whole status with server-side apply under one fixed
//     field owner, forcing ownership, so the status is exactly what this pass computed
//     and stale fields from earlier passes disappear.
package statusapply
