#!/bin/bash
# Session 2026-11-26c call 12: 64-key tiles at head dim 256 against 32 (two builds): attention
# tests on the 64-key build; the attention bench and pi0.5 alternated twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r12; mkdir -p $R
finish() { cp $REPO/.repro/s6call12.sh $R/; tar czf $OUT/results_s6c12.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
bash .debs/build.sh . /tmp/b2 -DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_HD256_KEYS=64 > $R/build2.log 2>&1 || { tail -60 $R/build2.log; exit 1; }
. /tmp/edgevla-env.sh
date
(/tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1) &
(cd /tmp/b2 && ctest -R "CudaAttention|CudaPi0" -j4 --output-on-failure > $R/gpu_ctest_k64.log 2>&1; echo "k64 ctest rc=$?"; tail -3 $R/gpu_ctest_k64.log) &
wait; date
for B in b b2; do /tmp/$B/bin/edgevla_bench_cuda_kernels --only attention --repeat 20 > $R/attn_$B.jsonl 2>&1; done
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for B in ("b", "b2"):
    rows = [json.loads(l) for l in open(f"{R}/attn_{B}.jsonl") if '"attention"' in l]
    print(B, " ".join(f"{d['valid_prefix']}/{d['splits_asked']}:{d['us_per_call_in_graph']:.2f}" for d in rows))
PY
pi0() { local tag=$1 B=$2
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $B/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag $(grep -h '^{' $R/pi0_$tag.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))')"; }
pi0 k32 /tmp/b; pi0 k64 /tmp/b2; pi0 k32b /tmp/b; pi0 k64b /tmp/b2
date
