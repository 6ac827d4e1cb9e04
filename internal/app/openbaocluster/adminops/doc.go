// Package adminops reconciles operations on an OpenBaoCluster, above all version
// changes. It is separate from the workload loop and writes only the status fields the
// statusapply.Upgrade owner holds.
//
// One pass, in order:
//
//  1. Fetch the cluster and take now once.
//  2. Observe: member pods, each Ready member's sys/health, and autopilot state through
//     the controller's read-only OpenBao identity.
//  3. Handle new control annotations (edge-triggered; the handled value is recorded).
//  4. Seed status.currentVersion the first time every member is Ready and reports the
//     same version.
//  5. Set the UpgradePaused and BreakGlass conditions.
//  6. Write the Upgrade part of the status once, in a deferred call.
package adminops
