#!/bin/bash
# Session 2026-11-26d call 9: one key tile a share (up to 32 shares) for the split attention,
# against the default (2 tiles a share, 12 shares at most), in the same run.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r9; mkdir -p $R
finish() { cp $REPO/.repro/s7call9.sh $R/; tar czf $OUT/results_s7c9.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
bash .debs/build.sh . /tmp/b1 "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_MIN_TILES=1 -DEDGEVLA_ATTN_MAX_SPLITS=32" > $R/build1.log 2>&1 || { tail -60 $R/build1.log; exit 1; }
. /tmp/edgevla-env.sh
date
[ -f /tmp/pi05/config.json ] || /tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init.log 2>&1 || { tail $R/init.log; exit 1; }
date
(cd /tmp/b1 && ctest -L gpu -R "Attention|CudaPi0|Flash|Attn" -j4 --output-on-failure > $R/gpu_ctest_variant.log 2>&1; echo "variant attention/pi0 tests rc=$?"; tail -3 $R/gpu_ctest_variant.log)
export EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt
for v in b b1 b b1; do
  /tmp/$v/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > "$R/pi0_$v.out" 2> "$R/pi0_$v.err"
  echo "== $v rc=$?"; grep '"bench"' "$R/pi0_$v.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'
done
/tmp/b1/bin/edgevla_bench_cuda_kernels --only attention --repeat 20 > $R/kernels_attention_b1.jsonl 2>&1
grep attention $R/kernels_attention_b1.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d["valid_prefix"], d["splits_asked"], d["us_per_call_in_graph"])' | tr '\n' ';'
echo; date
