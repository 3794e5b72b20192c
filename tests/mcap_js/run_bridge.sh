#!/usr/bin/env bash
# `edgevla bridge foxglove` against a real Foxglove WebSocket client (the npm package ws):
#
#   tests/mcap_js/run_bridge.sh <edgevla binary> <build dir>
#
# Starts a small live graph (a camera source and the image_features stage) and the bridge on
# a free port, in a domain and registry of their own under a temp dir in <build dir>; runs
# bridge_client.mjs (which says what is asserted); stops both with SIGINT and checks they exit
# cleanly and leave nothing in /dev/shm. Exits non-zero on any failure (temp dir kept then).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -ne 2 ]; then
  echo "usage: $0 <edgevla binary> <build dir>" >&2
  exit 2
fi
edgevla="$1"
build="$2"
fail() {
  echo "run_bridge.sh: $*" >&2
  exit 1
}
[ -x "$edgevla" ] || fail "edgevla binary '$edgevla' not found or not executable"
source "$here/npm_ready.sh"
npm_ready run_bridge.sh

mkdir -p "$build"
work="$(mktemp -d "$build/mcap_js_bridge.XXXXXX")"
export EDGEVLA_DOMAIN="bridge-test-$$"
export EDGEVLA_REGISTRY_DIR="$work/registry"
shm_before="$(ls /dev/shm)"

cat >"$work/graph.yaml" <<'YAML'
nodes:
  - name: source
    type: tensor_source
    params: {rate_hz: 30, width: 64, height: 48}
    remap: {image: /demo/image}
  - name: features
    type: image_features
    params: {gain: 1.0, noise_std: 0.05}
    remap: {image: /demo/image, features: /demo/features}
YAML

graph_pid=""
bridge_pid=""
cleanup() {
  [ -n "$bridge_pid" ] && kill "$bridge_pid" 2>/dev/null || true
  [ -n "$graph_pid" ] && kill "$graph_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

# The files exist before the processes start: a background job opens its redirections in the
# forked child, so the first read below could otherwise run before bridge.out is there.
: >"$work/graph.log"
: >"$work/bridge.out"
: >"$work/bridge.log"
"$edgevla" launch "$work/graph.yaml" --duration 120 >"$work/graph.log" 2>&1 &
graph_pid=$!
"$edgevla" bridge foxglove --port 0 --duration 120 >"$work/bridge.out" 2>"$work/bridge.log" &
bridge_pid=$!

port=""
for _ in $(seq 1 600); do
  port="$(sed -n 's|^foxglove bridge: ws://127.0.0.1:\([0-9]*\) .*|\1|p' "$work/bridge.out" || true)"
  [ -n "$port" ] && break
  kill -0 "$bridge_pid" 2>/dev/null || { cat "$work/bridge.log" >&2; fail "the bridge exited before listening"; }
  sleep 0.05
done
[ -n "$port" ] || fail "the bridge printed no address (files in $work)"

node "$here/bridge_client.mjs" "ws://127.0.0.1:$port" /demo/image/compressed /demo/features/plot actions 64 48 ||
  { cat "$work/bridge.log" >&2; fail "bridge_client.mjs failed (files in $work)"; }

kill -INT "$bridge_pid"
rc=0
wait "$bridge_pid" || rc=$?
bridge_pid=""
[ "$rc" -eq 0 ] || { cat "$work/bridge.log" >&2; fail "the bridge exited $rc after SIGINT"; }
grep -q "sent [1-9][0-9]* message(s)" "$work/bridge.log" || { cat "$work/bridge.log" >&2; fail "the bridge's stop line reports nothing sent"; }
kill -INT "$graph_pid"
rc=0
wait "$graph_pid" || rc=$?
graph_pid=""
[ "$rc" -eq 0 ] || { cat "$work/graph.log" >&2; fail "the graph exited $rc after SIGINT"; }

# Shared memory is named edgevla.<uid>.<pid>...: what is new since the start and belongs to a
# process that is gone was left behind (other processes on the machine may add their own).
left=""
for name in $(comm -13 <(echo "$shm_before" | sort) <(ls /dev/shm | sort)); do
  pid="$(echo "$name" | sed -n 's/^edgevla\.[0-9]*\.\([0-9]*\)\..*/\1/p')"
  [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && left="$left $name"
done
[ -z "$left" ] || fail "left in /dev/shm:$left"
rm -rf "$work"
echo "run_bridge.sh: the Foxglove bridge passes"
