#!/bin/bash
# Session 2026-11-26d call 12: the attention at head dim 256 with two warps a row group (each half
# of the head dim), against one warp (-DEDGEVLA_ATTN_HD256_SPLIT=1) in the same run; every GPU test
# on the new default.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r12; mkdir -p $R
finish() { cp $REPO/.repro/s7call12.sh $R/; tar czf $OUT/results_s7c12.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
([ -f /tmp/pi05/config.json ] || /tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init.log 2>&1) &
INIT=$!
bash .debs/build.sh . /tmp/b1 "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_HD256_SPLIT=1" > $R/build1.log 2>&1 || { tail -60 $R/build1.log; exit 1; }
. /tmp/edgevla-env.sh
(cd /tmp/b && ctest -L gpu -R "Attention|Attn|CudaKernels" -j4 --output-on-failure > $R/gpu_ctest_attention.log 2>&1; echo "attention+kernel tests rc=$?"; tail -3 $R/gpu_ctest_attention.log)
wait $INIT
date
export EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt
for v in b1 b b1 b; do
  /tmp/$v/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > "$R/pi0_$v.out" 2> "$R/pi0_$v.err"
  echo "== pi0 $v rc=$?"; grep '"bench"' "$R/pi0_$v.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'
done
for v in b1 b; do
  /tmp/$v/bin/edgevla_bench_cuda_kernels --only attention --repeat 20 > $R/kernels_attention_$v.jsonl 2>&1
  echo "attention bench $v:"; grep attention $R/kernels_attention_$v.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d["valid_prefix"], d["splits_asked"], d["us_per_call_in_graph"], "%.1e" % d["rel_l2_vs_unsplit"])' | tr '\n' ';'; echo
done
date
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
date
