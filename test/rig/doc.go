// Package rig is baokeeper's local proving ground: a real Kubernetes control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, all built from Go
// modules) plus a node agent that runs pods as local processes, inside a private
// network namespace that the rig creates and removes.
//
// How a run goes:
//
//  1. `rig netns-run` creates a named network namespace, brings up its loopback device
//     with 10.250.0.1 for the API server, optionally forwards a loopback port of the
//     host to the API server (for a person's kubectl), and runs a command inside.
//  2. Inside, `rig up` writes a PKI and a kubeconfig, starts etcd, the API server, the
//     controller manager and the scheduler, waits for each to be healthy, and starts the
//     node agent (package nodeagent) that registers three Nodes and runs their pods.
//  3. Tests and the demo talk to the API server with the kubeconfig and reach pods by
//     their 10.250.0.N addresses.
//  4. On SIGTERM or SIGINT, `rig up` stops every pod, then the scheduler, the
//     controller manager, the API server and etcd, in that order; `rig netns-run`
//     then deletes the namespace.
//
// Logs: <dir>/logs/<daemon>.log for the control plane, <dir>/nodes/pods/... for
// containers (see package nodeagent). docs/rig.md explains what the rig does not emulate.
package rig
