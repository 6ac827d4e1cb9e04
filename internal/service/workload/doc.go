// Package workload builds every Kubernetes object an OpenBaoCluster needs. The builders
// are pure: they take the cluster, the observed objects they must preserve and the
// inputs the reconciler gathered, and return typed objects. They never talk to the API
// server, never read the clock and never generate randomness on their own (the
// reconciler passes a clock value and a random source).
//
// What the package owns, in the order the reconciler applies it:
//
//  1. Names and labels of every object (names.go). The managed-by label is what the
//     controller's cache selects on.
//  2. Service accounts for the OpenBao pods and for executor Jobs, and the Role and
//     RoleBinding that OpenBao's Kubernetes service registration needs (objects.go).
//  3. The static-seal key Secret: generated once, never overwritten, and deliberately
//     not owned by the cluster so that deleting the custom resource never destroys the
//     key that decrypts the retained Raft volumes (secrets.go).
//  4. TLS: an operator-run CA and a serving certificate whose SANs cover every member
//     and every Service, with the renewal decision as a pure function (tls.go).
//  5. config.hcl and initialize.hcl in a ConfigMap (config.go, hcl.go). Self-initialization
//     is rendered only until the cluster reports initialized, and only ordinal 0 loads it.
//  6. The headless, client and active Services and the PodDisruptionBudget (objects.go).
//  7. The StatefulSet, whose OnDelete strategy leaves every replacement of a member to
//     the upgrade manager; an existing StatefulSet keeps its image and its immutable
//     fields (statefulset.go).
package workload
