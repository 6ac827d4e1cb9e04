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
//     The agent serves the kubelet API (exec and container logs) for all three nodes on
//     KubeletIP:KubeletPort (127.0.0.1:10250 inside the namespace) with the serving
//     certificate pki/kubelet.crt, and accepts only client certificates of the rig CA.
//     The nodes advertise 127.0.0.1 as their first InternalIP and 10250 as
//     status.daemonEndpoints.kubeletEndpoint.Port; the API server dials it
//     (--kubelet-preferred-address-types=InternalIP) with pki/apiserver-kubelet-client.crt
//     and verifies the kubelet's certificate with the rig CA
//     (--kubelet-certificate-authority).
//  3. Tests and the demo talk to the API server with the kubeconfig and reach pods by
//     their 10.250.0.N addresses. `kubectl exec` (with or without -i, not -t) and
//     `kubectl logs` work through the API server, so runbook commands such as
//     `kubectl exec -i ... -- bao operator raft snapshot restore -force /dev/stdin < bao.snap`
//     run as written.
//  4. On SIGTERM or SIGINT, `rig up` stops every pod, then the scheduler, the
//     controller manager, the API server and etcd, in that order; `rig netns-run`
//     then deletes the namespace.
//
// Logs: <dir>/logs/<daemon>.log for the control plane, <dir>/nodes/pods/... for
// containers (see package nodeagent). docs/rig.md explains what the rig does not emulate.
package rig
