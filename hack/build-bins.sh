#!/usr/bin/env bash
# build-bins.sh builds the test binaries baokeeper needs from Go modules only, into
# bin/ (git-ignored), keyed by version. A binary that is already there is not rebuilt.
#
#   hack/build-bins.sh envtest   kube-apiserver + etcd            -> bin/k8s-<v>/
#   hack/build-bins.sh rig       + kube-controller-manager, kube-scheduler, kubectl
#   hack/build-bins.sh openbao   bao 2.4.0 and relinked copies    -> bin/bao-<v>
#   hack/build-bins.sh s3        SeaweedFS `weed` (S3 server)     -> bin/s3server-<hash>
#   hack/build-bins.sh helm      helm 4 and helm 3 (chart checks) -> bin/helm-<v>
#
# Cold builds take minutes on 2 cores; a heartbeat line is printed every 30 s so a
# person (and CI) can see that work is going on.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.7.3}
BAO_VERSION=2.4.0
BAO_COMMIT=f9407a27fbee45f62ba521bba2bf1e2360c61031
BAO_BUILD_DATE=2025-08-28T20:23:15Z
# Relinked copies of the 2.4.0 source that report other versions, for upgrade tests.
BAO_FAKE_VERSIONS=${BAO_FAKE_VERSIONS:-"2.4.1 2.5.0 2.6.0"}

export GOFLAGS="-mod=readonly -buildvcs=false"
# CGO_ENABLED=0 and no -trimpath for kubernetes and etcd, as for baokeeper's own
# builds and tests (the Makefile exports the same): with the module versions they
# share aligned (hack/tools/*/go.mod, see docs/design/build-cache.md), a package
# that kube-apiserver and baokeeper's tests both use compiles once.
export CGO_ENABLED=0

log() { printf '[build-bins %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# run_with_heartbeat LABEL CMD... runs CMD and prints a line every 30 s while it runs.
run_with_heartbeat() {
  local label=$1; shift
  local start=$SECONDS
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -0 "$pid" 2>/dev/null && log "$label: still building ($((SECONDS - start)) s)"
  done
  wait "$pid"
  log "$label: done in $((SECONDS - start)) s"
}

k8s_ldflags() {
  local minor
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  echo "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
}

build_k8s() {
  local dir=$BIN/k8s-$K8S_VERSION
  mkdir -p "$dir"
  local pkgs=()
  for c in "$@"; do
    [ -x "$dir/$c" ] || pkgs+=("k8s.io/kubernetes/cmd/$c")
  done
  if [ ${#pkgs[@]} -eq 0 ]; then
    log "kubernetes $K8S_VERSION ($*): cached in ${dir#$ROOT/}"
    return
  fi
  log "kubernetes $K8S_VERSION: building ${pkgs[*]##*/} (cold: about 10-13 min on 2 cores)"
  (cd "$ROOT/hack/tools/k8s" && run_with_heartbeat "kubernetes ${pkgs[*]##*/}" \
    go build -ldflags "$(k8s_ldflags)" -o "$dir/" "${pkgs[@]}")
}

build_etcd() {
  local dir=$BIN/k8s-$K8S_VERSION
  mkdir -p "$dir"
  local have=""
  [ -x "$dir/etcd" ] && have=$("$dir/etcd" --version 2>/dev/null || true)
  if [[ "$have" == *"$ETCD_VERSION"* ]]; then
    log "etcd $ETCD_VERSION: cached"
    return
  fi
  log "etcd $ETCD_VERSION: building (about 1 min)"
  (cd "$ROOT/hack/tools/etcd" && run_with_heartbeat "etcd" \
    go build -ldflags "-s -w" -o "$dir/etcd" go.etcd.io/etcd/server/v3)
}

bao_ldflags() {
  echo "-s -w -X github.com/openbao/openbao/version.fullVersion=$1 -X github.com/openbao/openbao/version.GitCommit=$BAO_COMMIT -X github.com/openbao/openbao/version.BuildDate=$BAO_BUILD_DATE"
}

build_bao() {
  mkdir -p "$BIN"
  for v in "$BAO_VERSION" $BAO_FAKE_VERSIONS; do
    local out=$BIN/bao-$v
    if [ -x "$out" ]; then
      log "openbao $v: cached"
      continue
    fi
    if [ "$v" = "$BAO_VERSION" ]; then
      log "openbao $v: building from the Go module proxy (cold: about 7-10 min on 2 cores)"
    else
      log "openbao $v: relinking the $BAO_VERSION source with version $v (about 20 s)"
    fi
    (cd "$ROOT/hack/openbao" && run_with_heartbeat "openbao $v" \
      go build -trimpath -ldflags "$(bao_ldflags "$v")" -o "$out.tmp" github.com/openbao/openbao)
    mv "$out.tmp" "$out"
  done
}

# build_s3 builds SeaweedFS's `weed` (pinned in hack/tools/s3server/go.mod) as the rig's
# S3-compatible server; see docs/design/s3-server.md for how to run it.
build_s3() {
  local mod=github.com/seaweedfs/seaweedfs ver tag ldflags="-s -w"
  ver=$(cd "$ROOT/hack/tools/s3server" && go list -m -f '{{.Version}}' "$mod")
  tag=$ver
  # A pseudo-version (v0.0.0-<date>-<hash>) is named by its commit hash.
  if [[ "$ver" =~ [-.][0-9]{14}-([0-9a-f]{12})$ ]]; then
    tag=${BASH_REMATCH[1]}
    ldflags+=" -X $mod/weed/util/version.COMMIT=${tag:0:8}"
  fi
  local out=$BIN/s3server-$tag
  mkdir -p "$BIN"
  if [ -x "$out" ]; then
    log "s3server (seaweedfs $ver): cached in ${out#$ROOT/}"
    return
  fi
  log "s3server (seaweedfs $ver): building (cold: about 10 min on 2 cores)"
  (cd "$ROOT/hack/tools/s3server" && run_with_heartbeat "s3server" \
    go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$mod/weed")
  mv "$out.tmp" "$out"
}

# build_helm builds helm (pinned in hack/tools/helm/go.mod, its module versions
# aligned with baokeeper's and kubernetes' where they share one, so that the shared
# packages compile once: docs/design/build-cache.md).
build_helm() {
  build_helm_major v4 "most of kubernetes' client packages are shared"
  # Helm 3, for the check that the chart stays installable by Helm 3 users.
  build_helm_major v3 "Helm 3; nearly every package is shared with Helm 4's build"
}

# build_helm_major MAJOR NOTE builds helm.sh/helm/MAJOR at the version go.mod pins.
build_helm_major() {
  local major=$1 note=$2 ver out
  ver=$(cd "$ROOT/hack/tools/helm" && go list -m -f '{{.Version}}' "helm.sh/helm/$major")
  out=$BIN/helm-$ver
  mkdir -p "$BIN"
  if [ -x "$out" ]; then
    log "helm $ver: cached in ${out#$ROOT/}"
    return
  fi
  log "helm $ver: building (cold: a few minutes on 2 cores; $note)"
  (cd "$ROOT/hack/tools/helm" && run_with_heartbeat "helm $ver" \
    go build -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$ver" -o "$out.tmp" "helm.sh/helm/$major/cmd/helm")
  mv "$out.tmp" "$out"
}

case "${1:-}" in
  envtest) build_k8s kube-apiserver; build_etcd ;;
  rig) build_k8s kube-apiserver kube-controller-manager kube-scheduler kubectl; build_etcd ;;
  openbao) build_bao ;;
  s3) build_s3 ;;
  helm) build_helm ;;
  *) echo "usage: $0 envtest|rig|openbao|s3|helm" >&2; exit 2 ;;
esac
