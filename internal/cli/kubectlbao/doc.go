// Package kubectlbao is the kubectl plugin `kubectl bao`: it reads OpenBaoClusters
// and their events, says what an upgrade would do, and writes the manual controls
// (annotations and spec.upgrade.paused) the operator acts on. It never talks to
// OpenBao and never decides anything the operator would not: every verdict reuses the
// operator's own pure functions (version policy, prechecks, rolling.Plan,
// bluegreen.AcceptsPromote and AcceptsRollback, breakglass.Acknowledge).
//
// Each command runs these steps:
//
//  1. Resolve the connection from the kubeconfig flags (genericclioptions.ConfigFlags:
//     --kubeconfig, --context, --namespace, ...) and build one controller-runtime
//     client.
//  2. Read the OpenBaoCluster once (and, for timeline, its events).
//  3. Decide with a pure function of what was read and one clock reading: the
//     rendering of status, the plan, the verdict on a control request, the ordered
//     timeline. These functions have table tests and do no I/O.
//  4. For a control request that the operator would accept: write it once, as a JSON
//     merge patch with the read resourceVersion as precondition, under the field
//     manager kubectl-bao/<user> (the user as the API server names it, from a
//     SelfSubjectReview); a conflict re-reads and decides again. A request the
//     operator would refuse (a wrong break-glass nonce, a promote before the hold)
//     writes nothing.
//  5. Print the result for a person (describe-like text) or, with -o json|yaml, as
//     an object.
package kubectlbao
