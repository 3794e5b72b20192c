#!/bin/bash
# Session 2026-11-26e call 4: RoPE applied by the attention as it reads q and the suffix keys
# (a per-run (cos, sin) table), against the rope kernel per layer and step
# (EDGEVLA_CUDA_ROPE_ON_LOAD=0, same binary); alternated twice; then every GPU test.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { cp $REPO/.repro/s8call4.sh $R/; tar czf $OUT/results_s8c4.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90
rm -rf /tmp/b /tmp/b0 /tmp/b4
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
[ -d /tmp/pi05 ] || ( $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1 ) &
[ -d /tmp/groot ] || ( $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1 ) &
(cd /tmp/b && timeout 300 ctest -L gpu -R "[Aa]ttention|CudaPi0|cuda_pi0" --output-on-failure > $R/gpu_attn.log 2>&1; echo "attention+pi0 tests rc=$?"; grep -E "tests passed|Failed|FAILED|differ|Rope" $R/gpu_attn.log | head -30)
wait; date
summ() { python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f bb %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"], d.get("backbone_ms", {}).get("median", 0)) for d in map(json.loads, sys.stdin)))'; }
for rep in 1 2; do
  for v in 1 0; do
    EDGEVLA_CUDA_ROPE_ON_LOAD=$v /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0_rope${v}_$rep.out 2> $R/pi0_rope${v}_$rep.err
    echo "pi0 rope on load=$v:"; grep -h '"bench"' $R/pi0_rope${v}_$rep.out | summ
  done
done
grep -h "RoPE" $R/pi0_rope1_1.err $R/pi0_rope0_1.err | head -2
date
(cd /tmp/b && timeout 400 ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu tests rc=$?"; grep -E "tests passed|Failed" $R/gpu_ctest.log; tail -3 $R/gpu_ctest.log)
date
