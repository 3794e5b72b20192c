#!/bin/bash
# Session 2026-11-26e call 2: the attention on warpgroup multiplies (attn_wg, sm_90a) against the
# mma.sync kernel (-DEDGEVLA_ATTN_WGMMA=0), after a standalone check of the descriptor layouts.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
finish() { cp $REPO/.repro/s8call2.sh $REPO/.repro/wg/probe.cu $R/; tar czf $OUT/results_s8c2.tgz -C $R . ; }
trap finish EXIT
date
(cd .repro/wg && nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/probe probe.cu > $R/probe_build.log 2>&1 && /tmp/probe) 2>&1 | tee $R/probe.log
export CUDAARCHS=90a
rm -rf /tmp/b /tmp/b0 /tmp/b4
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
grep -c "sm_90a" /tmp/b/build.ninja
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
[ -d /tmp/pi05 ] || ( $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1 ) &
[ -d /tmp/groot ] || ( $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1 ) &
(cd /tmp/b && timeout 300 ctest -L gpu -R "[Aa]ttention|CudaPi0" --output-on-failure > $R/gpu_attn.log 2>&1; echo "attention+pi0 tests rc=$?"; grep -E "tests passed|Failed|FAILED|rel|cos" $R/gpu_attn.log | head -30)
wait; date
bash .debs/build.sh . /tmp/b0 "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_WGMMA=0" > $R/build0.log 2>&1 || { tail -30 $R/build0.log; }
. /tmp/edgevla-env.sh
date
for v in b b0; do
  /tmp/$v/bin/edgevla_bench_cuda_kernels --only attention > $R/kern_attn_$v.out 2> $R/kern_attn_$v.err
  echo "kernel $v:"; grep '"attention"' $R/kern_attn_$v.out | python3 -c '
import json,sys
for d in map(json.loads, sys.stdin): print("  valid %d splits %d: %.2f us  rel %.1e" % (d["valid_prefix"], d["splits_asked"], d["us_per_call_in_graph"], d["rel_l2_vs_unsplit"]))'
done
summ() { python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f bb %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"], d.get("backbone_ms", {}).get("median", 0)) for d in map(json.loads, sys.stdin)))'; }
for rep in 1 2; do
  for v in b b0; do
    /tmp/$v/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0_${v}_$rep.out 2> $R/pi0_${v}_$rep.err
    echo "pi0 $v:"; grep -h '"bench"' $R/pi0_${v}_$rep.out | summ
    /tmp/$v/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 10 > $R/groot_${v}_$rep.out 2> $R/groot_${v}_$rep.err
    echo "groot $v:"; grep -h '"bench"' $R/groot_${v}_$rep.out | summ
  done
done
date
(cd /tmp/b0 && timeout 200 ctest -L gpu -R "[Aa]ttention" --output-on-failure > $R/gpu_attn_b0.log 2>&1; echo "b0 attention tests rc=$?"; tail -3 $R/gpu_attn_b0.log)
(cd /tmp/b && timeout 400 ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu tests rc=$?"; grep -E "tests passed|Failed" $R/gpu_ctest.log; tail -3 $R/gpu_ctest.log)
date
