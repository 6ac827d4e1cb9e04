// Package adminops reconciles the long-running operations of an OpenBaoCluster
// (upgrades, rollouts, scaling, the pre-upgrade snapshot). It is separate from the
// workload loop and writes only the status fields the statusapply.Upgrade owner
// holds. It knows no operation's internals: each is a pure operation.Operation in
// its own service package.
//
// One pass, in order:
//
//  1. Fetch the cluster and take now once.
//  2. Observe (observe.go): member pods, each Ready member's sys/health and
//     autopilot state through the controller's read-only OpenBao identity, the
//     StatefulSets, the executor Jobs and their pods, the volume claims, the client
//     Service and, when this pass evaluates prechecks that need it, the snapshot
//     target. Nothing is read after this.
//  3. Handle new control annotations (edge-triggered; the handled value is recorded)
//     by the rules kubectl bao shares (internal/service/control).
//  4. Seed status.currentVersion the first time every member is Ready and reports the
//     same version.
//  5. Choose the one operation of the pass (choose.go) and ask it once: its Plan is
//     the status the pass leaves and at most one action.
//  6. Carry the Plan out with the one executor (execute.go).
//  7. Set the UpgradePaused, BreakGlass and RolledBack conditions, write the Upgrade
//     part of the status once (deferred), then announce the pass's events and delete
//     executor Jobs whose pod cannot start.
package adminops
