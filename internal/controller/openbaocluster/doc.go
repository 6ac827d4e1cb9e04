// Package openbaocluster wires the OpenBaoCluster reconciler into controller-runtime.
//
//  1. Watch OpenBaoClusters for spec and annotation changes (status writes of our own
//     do not trigger a pass).
//  2. Watch every object the reconciler owns, so a change or deletion is repaired.
//  3. Map member pods back to their cluster by the baokeeper.dev/cluster label, so a
//     pod becoming Ready drives the next step without polling.
package openbaocluster
