// Package openbaocluster reconciles the workload of an OpenBaoCluster: the objects a
// cluster needs to exist, initialize and serve, and the status that describes it.
// Version changes are not carried out here: this package only seeds
// status.currentVersion from what the members run and reports a pending change.
//
// One pass of Reconcile, in order:
//
//  1. Fetch the OpenBaoCluster; a deleted one needs nothing (owner references let the
//     garbage collector remove what baokeeper created; the seal key and the Raft
//     volumes are kept on purpose).
//  2. Observe once: the StatefulSet, member pods, seal, CA and TLS Secrets, the
//     service-account issuer, and each Ready member's sys/health. now is taken once.
//  3. Validate the spec with the version and image policy. A refusal is written to
//     status (SpecValid=False, Degraded=True), announced with an event, and ends the
//     pass with a terminal error before anything is changed.
//  4. Apply the workload objects with server-side apply, in dependency order:
//     identities and RBAC, seal key (create only), TLS, configuration, Services, PDB,
//     StatefulSet.
//  5. Compute the status from the observation (pure functions in status.go) and write
//     it once, in a deferred call, through statusapply.
package openbaocluster
