// Package statusapply is the one way an OpenBaoCluster's status is written.
//
//  1. Two reconcilers write status, each as an Owner with its own field manager and
//     disjoint fields: Workload (phase, message, members, workload conditions) and
//     Upgrade (currentVersion, upgrade, requests, break-glass, upgrade conditions).
//     Neither can write back a stale value of the other's field.
//  2. A reconciler keeps a copy of the status it read at the start of the pass and
//     computes its whole part of the new status in memory.
//  3. In a deferred call it hands both to Apply, which skips the write when its part
//     is semantically equal (no write, no event, no watch traffic when idle).
//  4. Otherwise Apply sends its part with server-side apply under its field manager,
//     forcing ownership, so that part is exactly what the pass computed and fields it
//     no longer sets disappear.
//  5. The Upgrade owner's write is conditional on the resourceVersion the pass read
//     (FromFreshRead). The informer cache lags behind the operator's own writes for a
//     few milliseconds; a pass decided on such a stale read would otherwise land a
//     decision twice (a second break-glass entry with a new nonce, found on the rig).
//     The write fails with a Conflict, the pass is discarded, and the next one runs on
//     a fresh read. The Workload owner only reports observations, which its next pass
//     corrects, so its writes are unconditional.
package statusapply
