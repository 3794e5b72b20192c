#!/usr/bin/env bash
# Per-node replay across backends: a pi0.5 graph recorded on the CPU backend, then its
# action_head replayed from the bag on the cuda backend — in f32 (actions rel-L2 <= 1e-4) and
# in bf16 (actions rel-L2 <= 1e-2, cosine >= 0.999). Exits 77 (ctest: not run) where no GPU is present.
#   cuda_replay_test.sh <edgevla binary> <source dir>
set -euo pipefail
E=$1
SRC=$2
. "$SRC/tests/gpu/require_gpu.sh"
EDGEVLA_CHECKPOINT="$W/ck" EDGEVLA_RUN_DIR="$W" timeout 120 "$E" launch "$SRC/launch/pi05_demo.yaml" --duration 8 \
  > "$W/launch.log" 2>&1 || { tail -20 "$W/launch.log"; exit 1; }
for p in "f32 actions:rel_l2=1e-4" "bf16 actions:rel_l2=1e-2,cosine=0.999"; do
  set -- $p
  echo "== action_head replayed on cuda, precision $1, tolerance $2"
  EDGEVLA_CHECKPOINT="$W/ck" "$E" replay --bag "$W/pi05_demo.mcap" --node action_head \
    --launch "$SRC/launch/pi05_demo.yaml" --set backend=cuda --set precision="$1" --tolerance "$2" \
    --report "$W/replay_$1.json"
done
