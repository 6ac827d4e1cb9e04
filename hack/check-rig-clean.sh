#!/usr/bin/env bash
# check-rig-clean.sh NETNS: after an e2e run, fail if anything the rig started is
# still around: a process whose executable lives in bin/ (control plane, OpenBao,
# baokeeper, the rig), the network namespace, or an isolated pod's namespace or
# clock offset.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ns=${1:?usage: check-rig-clean.sh NETNS}
bad=0
if ip netns list 2>/dev/null | grep -qw "$ns"; then
  echo "leftover: network namespace $ns"; bad=1
fi
# Isolated pods' namespaces (test/rig/nodeagent/podnet.go).
for pod_ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^bkpod-/ {print $1}'); do
  echo "leftover: pod network namespace $pod_ns"; bad=1
done
# Clock-adjustable pods' offset files (test/rig/nodeagent/clock.go).
for f in /run/bkclock/*; do
  [ -e "$f" ] && { echo "leftover: pod clock offset $f"; bad=1; }
done
# Everything the rig starts runs in its network namespace, except the `rig netns-run`
# launcher itself. Processes from bin/ in the host's namespace (say, envtest's etcd of
# a `go test` running at the same time) are not the rig's.
host_net=$(readlink /proc/$$/ns/net) # this script runs in the host namespace
for p in /proc/[0-9]*; do
  exe=$(readlink "$p/exe" 2>/dev/null) || continue
  case "$exe" in
    "$ROOT"/bin/*)
      cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-160)
      net=$(readlink "$p/ns/net" 2>/dev/null)
      if [ "$net" = "$host_net" ] && [[ "$cmd" != *"--name $ns "* ]]; then
        continue
      fi
      echo "leftover process ${p#/proc/}: $exe $cmd"; bad=1 ;;
  esac
done
if [ "$bad" -eq 0 ]; then
  echo "rig cleanup: no process or network namespace left behind"
fi
exit "$bad"
