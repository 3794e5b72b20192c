#!/usr/bin/env bash
# The GPU launch files on a GPU, each with recording and `bag report`: pi05_cuda (one process:
# the prefix cache handed from backbone to action head on the device; the recorder, in its own
# process, gets host copies), pi05_cuda_multiprocess (the cache crossing processes) and pi05_mixed (cuda
# backbone, cpu action head: the cache copied to the host for the cpu engine). Each must make
# action chunks and run its stages where the file says; a knob set in the environment shows in
# the engines' description. Exits 77 (ctest: not run) where no GPU
# is present.
#   cuda_launch_test.sh <edgevla binary> <source dir>
set -euo pipefail
E=$1
SRC=$2
. "$SRC/tests/gpu/require_gpu.sh"
export EDGEVLA_CHECKPOINT="$W/ck" EDGEVLA_RUN_DIR="$W" EDGEVLA_DOMAIN="cudalaunch$$"
check() {  # <name> <python condition on the report r and the log text>
  local name=$1 cond=$2
  timeout 150 "$E" launch "$SRC/launch/$name.yaml" --duration 10 > "$W/$name.log" 2>&1 || { tail -30 "$W/$name.log"; exit 1; }
  "$E" bag report "$W/$name.mcap" --json "$W/$name.json" > /dev/null
  python3 - "$W/$name.json" "$W/$name.log" "$name" "$cond" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1])); log = open(sys.argv[2]).read(); name = sys.argv[3]
chunks = r["actuation"]["chunks_received"]
ok = chunks >= 3 and eval(sys.argv[4])
print(f"{name}: {chunks} chunks, {'ok' if ok else 'FAILED: ' + sys.argv[4]}")
if not ok:
    print(log[-3000:])
    sys.exit(1)
PY
}
# A knob set in the environment (its default value here) is named in the engines' description,
# beside any other knob the caller's environment sets.
export EDGEVLA_ATTN_NARROW=2
check pi05_cuda "re.search(r\"action_head: pi05 runs on backend 'cuda' \(.*knobs [^)]*EDGEVLA_ATTN_NARROW=2\", log)"
unset EDGEVLA_ATTN_NARROW
check pi05_cuda_multiprocess "\"backbone: pi05 runs on backend 'cuda'\" in log"
check pi05_mixed "\"action_head: pi05 runs on backend 'cpu'\" in log"
echo "all GPU launch files ran"
