#!/usr/bin/env bash
# The baokeeper demo. Runs inside the rig's network namespace (make demo arranges it):
# boots the rig, installs baokeeper from config/default, creates a 3-member
# OpenBaoCluster, writes and reads secrets, prints a timeline, and tears down.
# DEMO_HOLD=1 keeps everything running until Ctrl-C so you can explore with kubectl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/bin
KUBECTL=$BIN/k8s-1.37.2/kubectl
DIR=$(mktemp -d /tmp/baokeeper-demo.XXXXXX)
T0=$SECONDS
TIMELINE=()

say() { printf '\n\033[1m[%3ds] %s\033[0m\n' "$((SECONDS - T0))" "$*"; TIMELINE+=("$(printf '%4ds  %s' "$((SECONDS - T0))" "$*")"); }
k() { "$KUBECTL" --kubeconfig "$DIR/kubeconfig" "$@"; }

RIG_PID=
S3_PID=
cleanup() {
  local code=$?
  if [ -n "$S3_PID" ]; then
    kill -TERM "$S3_PID" 2>/dev/null || true
    wait "$S3_PID" 2>/dev/null || true
  fi
  if [ -n "$RIG_PID" ]; then
    say "Tearing down (pods, then the control plane)"
    kill -TERM "$RIG_PID" 2>/dev/null || true
    wait "$RIG_PID" 2>/dev/null || true
  fi
  if [ "$code" -ne 0 ]; then
    echo "The demo failed (exit $code). Logs: $DIR/logs (control plane), $DIR/nodes/pods (containers), $DIR/rig.log"
  else
    rm -rf "$DIR"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "Booting the rig: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a node agent with 3 nodes"
"$BIN/rig" up --dir "$DIR" --root "$ROOT" >"$DIR/rig.log" 2>&1 &
RIG_PID=$!
until [ -f "$DIR/ready" ]; do
  kill -0 "$RIG_PID" 2>/dev/null || { cat "$DIR/rig.log"; exit 1; }
  sleep 0.5
done
sed 's#server: https://10.250.0.1:6443#server: https://127.0.0.1:16443#' "$DIR/kubeconfig" >"$DIR/kubeconfig-host"
say "Rig ready. From another terminal: KUBECONFIG=$DIR/kubeconfig-host $KUBECTL get nodes"
k get nodes

say "Starting an S3-compatible server (SeaweedFS, built from Go modules) for pre-upgrade snapshots"
mkdir -p "$DIR/s3"
"$BIN/rig" s3 --dir "$DIR/s3" --bin "$(ls "$BIN"/s3server-* | head -n1)" --bucket snapshots >"$DIR/s3.log" 2>&1 &
S3_PID=$!
until [ -f "$DIR/s3/ready" ]; do
  kill -0 "$S3_PID" 2>/dev/null || { cat "$DIR/s3.log"; exit 1; }
  sleep 0.5
done

say "Installing baokeeper: kubectl apply -k config/default"
k apply --server-side -k "$ROOT/config/default" >/dev/null
k -n baokeeper-system rollout status deployment/baokeeper --timeout=120s

say "Creating a 3-member OpenBaoCluster at 2.4.0 (hack/demo/cluster.yaml)"
k apply --server-side -f "$ROOT/hack/demo/cluster.yaml" >/dev/null
# The rig's S3 test identity (test/rig/s3server), for the pre-upgrade snapshot.
k create secret generic demo-s3 -n demo \
  --from-literal=AWS_ACCESS_KEY_ID=baokeeper-test --from-literal=AWS_SECRET_ACCESS_KEY=baokeeper-test-secret-0123456789 >/dev/null

say "Waiting for it to initialize itself and become Running (kubectl get bao -n demo)"
last=
deadline=$((SECONDS + 300))
while :; do
  line=$(k get bao -n demo bao --no-headers 2>/dev/null || true)
  if [ "$line" != "$last" ]; then
    printf '  %s\n' "$line"
    last=$line
  fi
  phase=$(k get bao -n demo bao -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Running ] && break
  [ $SECONDS -lt $deadline ] || { echo "not Running after 300 s"; k describe bao -n demo bao; exit 1; }
  sleep 1
done
k get bao -n demo
k get pods -n demo -o wide

say "Logging in as the app service account (JWT auth, audience baokeeper) and writing secrets"
IP=$(k get pod -n demo bao-0 -o jsonpath='{.status.podIP}')
k get secret -n demo bao-tls -o jsonpath='{.data.ca\.crt}' | base64 -d >"$DIR/ca.crt"
export BAO_ADDR=https://$IP:8200 BAO_CACERT=$DIR/ca.crt BAO_TLS_SERVER_NAME=bao.demo.svc
JWT=$(k create token app -n demo --audience baokeeper --duration 10m)
BAO_TOKEN=$("$BIN/bao-2.4.0" write -field=token auth/baokeeper-jwt/login role=app jwt="$JWT")
export BAO_TOKEN
for i in 1 2 3; do
  "$BIN/bao-2.4.0" kv put -mount=secret "demo/item-$i" value="secret number $i" >/dev/null
done
say "Reading them back"
for i in 1 2 3; do
  printf '  demo/item-%s = %s\n' "$i" "$("$BIN/bao-2.4.0" kv get -mount=secret -field=value "demo/item-$i")"
done

say "Upgrading to 2.4.1: kubectl patch bao bao -n demo --type merge -p '{\"spec\":{\"version\":\"2.4.1\"}}'"
k patch bao -n demo bao --type merge -p '{"spec":{"version":"2.4.1"}}' >/dev/null
last=
deadline=$((SECONDS + 300))
while :; do
  msg=$(k get bao -n demo bao -o jsonpath='{.status.phase} | {.status.currentVersion} | {.status.message}' 2>/dev/null || true)
  if [ "$msg" != "$last" ]; then
    printf '  [%3ds] %s\n' "$((SECONDS - T0))" "$msg"
    last=$msg
  fi
  case "$msg" in "Running | 2.4.1 |"*) break ;; esac
  [ $SECONDS -lt $deadline ] || { echo "the upgrade did not finish in 300 s"; k describe bao -n demo bao; exit 1; }
  sleep 0.5
done
say "Upgraded. Events of the upgrade:"
k get events -n demo --field-selector involvedObject.kind=OpenBaoCluster -o custom-columns=REASON:.reason,MESSAGE:.message --sort-by=.metadata.creationTimestamp | grep -E "Upgrade|Snapshot|REASON" || true
say "The pre-upgrade snapshot's receipt (status.lastSnapshot):"
k get bao -n demo bao -o jsonpath='{.status.lastSnapshot}'; echo

say "Reading the secrets back after the upgrade"
for i in 1 2 3; do
  printf '  demo/item-%s = %s\n' "$i" "$("$BIN/bao-2.4.0" kv get -mount=secret -field=value "demo/item-$i")"
done
unset BAO_TOKEN

say "Done"
printf '\nTimeline\n'
printf '  %s\n' "${TIMELINE[@]}"
if [ "${DEMO_HOLD:-}" = 1 ]; then
  echo "DEMO_HOLD=1: everything keeps running. KUBECONFIG=$DIR/kubeconfig-host. Ctrl-C to tear down."
  wait "$RIG_PID"
fi
