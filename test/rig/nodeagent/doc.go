// Package nodeagent is the node agent of baokeeper's local test rig: a stand-in for
// the kubelet that registers Nodes with virtual-kubelet (node/nodeutil) and runs every
// pod bound to them as local processes on this machine. There is no container runtime
// and no image pull: container images map to local executables.
//
// What Run does:
//
//  1. Loads the kubeconfig, starts informers for Secrets, ConfigMaps, Services,
//     EndpointSlices, PersistentVolumeClaims and PersistentVolumes, and ensures the
//     StorageClass rig-local (default class, provisioner rig.baokeeper.dev/local,
//     Immediate binding, Retain).
//  2. Runs a provisioner: every Pending claim of class rig-local (or of no class) gets a
//     PersistentVolume pvc-<claim uid> with hostPath StateDir/pv/<ns>/<claim>-<uid>,
//     pre-bound to the claim; kube-controller-manager binds them. A pod that is deleted
//     and re-created keeps its claim and so its directory (Raft data survives).
//  3. With Config.KubeletAPI set, listens for the kubelet API (see below) first, then
//     registers one virtual-kubelet node per Config.Nodes name, with capacity cpu 8,
//     memory 32Gi, pods 110, os/arch labels, InternalIP the kubelet API's address (first,
//     the one the API server dials) and Config.NodeIP, and the kubelet API's port as
//     status.daemonEndpoints.kubeletEndpoint.Port; VK marks it Ready and keeps its Lease
//     fresh. VK's own HTTP server stays off.
//  4. For each pod bound to a node (CreatePod): waits for an earlier pod of the same name
//     to be fully stopped, allocates the lowest free address Config.PodIPPrefix+N
//     (N in 10..250) and adds it as <ip>/32 to lo (hostNetwork pods use NodeIP), and
//     writes the pod's hosts file.
//  5. Materializes the pod's volumes under StateDir/pods/<ns>_<pod>_<uid>/volumes and
//     refreshes them every 2 s and on watch events, one file at a time (temp file, then
//     rename): configMap, secret, downwardAPI, projected (serviceAccountToken from the
//     TokenRequest API with the requested audience and expiration, renewed at 80% of its
//     lifetime; configMap; secret; downwardAPI) including the kube-api-access-* volume
//     (token, ca.crt, namespace), emptyDir (kept across container restarts, deleted
//     with the pod), persistentVolumeClaim (the bound PV's hostPath or local path;
//     containers wait with reason ContainerCreating until the claim is bound) and
//     hostPath. Containers start only once every volume is ready.
//  6. Runs init containers one after the other to completion (restartable "sidecar"
//     init containers keep running once started), then every container. Each container
//     is a process started through a helper (os.Args[0] re-executed with PodExecArg) in
//     its own process group and a private mount namespace (and UTS namespace: the
//     hostname is the pod's). The helper makes / private, bind-mounts every volume at
//     its mountPath (subPath and subPathExpr supported; read-only when asked, and
//     always for configMap, secret, projected and downwardAPI volumes, like the
//     kubelet), the pod's hosts file over /etc/hosts and a per-container file at
//     terminationMessagePath, sets the nice value of a container whose image starts
//     with one of Config.FavorImages (FavorNice), then execs the command. Mount points missing on the host
//     are created and listed, one path per line, parents first, in
//     StateDir/created-mountpoints.txt (duplicates possible) so the rig can remove them
//     (in reverse order) when it ends.
//  7. Environment: PATH, HOME, HOSTNAME, KUBERNETES_SERVICE_HOST/PORT (and the other
//     kubernetes Service variables), envFrom, then env with literal values, fieldRef
//     (metadata.name/namespace/uid/labels/annotations, spec.nodeName,
//     spec.serviceAccountName, status.podIP(s), status.hostIP(s)), resourceFieldRef,
//     secretKeyRef and configMapKeyRef (optional respected; a missing required one makes
//     the container wait with CreateContainerConfigError). $(VAR) expands in env values,
//     command, args and subPathExpr like the kubelet ($$ escapes, unknown stays).
//  8. Runs readiness and liveness probes for real (httpGet over HTTP or HTTPS without
//     certificate checks against the pod IP with the path's query string kept, 200-399
//     is success; tcpSocket; exec through the helper, with timeout), honouring
//     initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold and
//     failureThreshold (kubelet defaults when zero). A liveness failure kills and
//     restarts the container.
//  9. Restarts containers by restartPolicy (Always, OnFailure, Never) with a back-off of
//     1 s doubling to 30 s, reset after 60 s of running; a pod whose containers are all
//     done ends Succeeded (all exited 0) or Failed, so Jobs complete or fail.
//  10. Pushes the pod status to VK whenever it changes (PodNotifier): phase, conditions
//     (PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled; a
//     LastTransitionTime moves only when the status does; readiness gates are honoured;
//     conditions of other writers are kept), podIP(s), hostIP(s), startTime and
//     container statuses (imageID rig://<executable>, containerID rig://<pid>, ready,
//     started, restartCount, state and lastState; exit codes 128+signal for killed
//     processes; termination message from the termination log or, with
//     FallbackToLogsOnError, the log tail).
//  11. On deletion (DeletePod, i.e. a deletionTimestamp): runs preStop hooks (exec,
//     httpGet, sleep), sends SIGTERM to every process group, SIGKILL after the grace
//     period, frees the address, removes volumes, writes the terminal status and deletes
//     the pod object with grace 0 and a UID precondition, as a kubelet does (otherwise
//     VK would wait out the whole grace period). An image change of a running pod
//     restarts that container.
//  12. On agent restart VK hands every pod of its nodes to CreatePod again: processes a
//     crashed agent left behind (pid files) are killed, and the pods start again with
//     their old address when free, start time and restart counts (plus one).
//  13. When ctx ends: stops VK, then every pod (SIGTERM, the pod's grace capped at 10 s,
//     SIGKILL) and removes the addresses it added. Pod objects, logs, volume directories
//     (emptyDirs survive an agent restart) and persistent volumes stay.
//
// Images from OCI layouts: Config.ImageLayouts (make image writes dist/oci) are
// searched first, by the org.opencontainers.image.ref.name of each index entry (the
// same candidates as the image map) or by the entry's digest. The entry's image for
// linux and this machine's architecture is unpacked once under StateDir/images/<digest>
// and its entrypoint is the container's executable; with runAsNonRoot, the image's
// User must be a number other than 0 (or runAsUser set), as the kubelet checks, else
// CreateContainerConfigError. Processes still run as the rig's user: the rig has no
// user namespaces.
//
// Image to executable: Config.ImageMap is looked up with the image as written, then
// without registry host, then "repo:tag" ignoring "@digest" (also with Docker Hub's
// implicit library/ and :latest). An image that is not mapped (or maps to a missing
// file) makes the container wait with reason ErrImagePull and a message naming the
// image and the map.
//
// Which executable runs: each container gets StateDir/pods/<pod dir>/containers/<name>/bin
// first on PATH, holding symlinks to the mapped executable named after the image's
// repository base name, the names listed for it (openbao -> bao, baokeeper ->
// baokeeper) and the executable's own file name. Then:
//   - no command: the mapped executable runs with args;
//   - command[0] a shell (sh, bash, dash, ash): kept as written, so a script such as
//     "exec bao server" finds bao through PATH;
//   - command[0] an absolute path: kept when it exists on this machine, else the mapped
//     executable runs in its place;
//   - command[0] a bare name: the first match on that PATH (the image's names resolve to
//     the mapped executable), else the mapped executable.
//
// argv[0] stays as the pod spec wrote it.
//
// Kubelet API: one HTTPS listener for all nodes on Config.KubeletAPI.Addr, which must be
// on 127.0.0.0/8 (it runs commands in containers), with the serving certificate
// CertFile/KeyFile and mutual TLS: a client without a certificate signed by
// ClientCAFile fails the handshake. The routes are virtual-kubelet's (node/api), each
// request going to the node that runs the pod:
//   - /exec (kubectl exec, SPDY or WebSocket streams): runs the command like an exec
//     probe, through the helper with the container's environment, PATH lookup, mounts,
//     hosts file and hostname, while the container runs. stdin (with -i) is piped to it
//     up to the client's EOF; stdout and stderr are streamed as they come, without a
//     size limit. A non-zero exit comes back as a k8s.io/utils/exec.ExitError, so
//     kubectl exec exits with the command's code. The command is killed (its process
//     group) when the session ends, when the container's process exits and when the
//     agent stops; background processes it started die with it. TTY sessions (-t) are
//     refused with an error.
//   - /containerLogs (kubectl logs): the container's log file, with tailLines and
//     limitBytes applied; follow, previous, timestamps and since are ignored.
//   - attach and port-forward answer 501 Not Implemented; /pods and stats are not served.
//
// Names: there is no cluster DNS and no kube-proxy. Each pod's hosts file maps
// localhost, its own hostname (and FQDN with spec.subdomain), kubernetes.default.svc
// (and shorter forms) to Config.APIServerHost, every ready (or publishNotReadyAddresses)
// endpoint of headless Services as <svc>.<ns>.svc[.cluster.local] and, with an
// endpoint hostname (StatefulSet pods), <hostname>.<svc>.<ns>.svc[.cluster.local], and
// the names of ClusterIP Services to the first ready endpoint address: the rig's
// stand-in for a virtual IP, without load balancing or port translation (clients must
// use the target port). Short names resolve only within the pod's namespace. The file
// is regenerated every second and on Service/EndpointSlice events and rewritten in
// place, because it is bind-mounted.
//
// Not emulated: isolation beyond mount and UTS namespaces (processes share the
// machine's PID and network namespaces and run as the agent's user; securityContext is
// ignored), cgroups and resource limits, kube-proxy virtual IPs, CNI, image pulls,
// startup probes and gRPC probes (a gRPC probe always fails), postStart hooks,
// activeDeadlineSeconds, ephemeral containers, service links env vars for other
// Services, events, and the kubelet API's attach, port-forward, exec with a TTY,
// log following and stats. Exec sessions are not tracked in pid files: a crashed
// agent leaves their commands running.
// Exec probes and hooks see every process of the machine: a hook that kills by name
// (pidof, pkill) hits other pods too. Memory-backed emptyDirs are plain directories.
//
// Logs: the agent logs through Config.Log. Each container's stdout and stderr go to
// StateDir/pods/<namespace>_<pod>_<uid>/<container>.log, appended across restarts and
// kept after the pod is deleted. Persistent volumes are under StateDir/pv.
package nodeagent
