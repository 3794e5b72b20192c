#!/bin/bash
# Prepared in run 41 for the next session (~8 min): the warpgroup GEMM on int8 weights
# (kernels/wgmma_w8.*, built after call 7, never run on a GPU). Its GPU test first (quantisation
# read back, products against the host, a replayed graph, refusals), the pi0 / pi0.5 engines on
# it against the CPU (CudaPi0Wgmma.TheInt8WeightsAgree; GR00T's in
# CudaGroot.TheWarpgroupGemmsAgreeWithBlas), then edgevla_bench_cuda_w8 (each head projection shape
# on int8 against bf16 weights, alternated) and both families' heads and E2E with
# EDGEVLA_CUDA_WGMMA_W8=1 against the default, alternated twice.
# Predicted: int8 / bf16 0.6-0.75 at gate|up and GR00T's ff1 / ff2 (half the weight bytes, the
# widening hidden under the copies), 0.75-0.9 at q|k|v, o and down; ≥ 1 would mean the converter
# warpgroup sits on the critical path (then: widen in the consumers, or fewer stages ahead).
exec > $OUT/run.log 2>&1
R=/tmp/rw; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
timeout 200 /tmp/b/bin/cuda_wgmma_w8_test > $R/w8_test.log 2>&1; echo "w8 test rc=$?"; grep -E "rel-L2|OK \]|FAILED|Failure|Expected|Which" $R/w8_test.log | head -30
timeout 240 /tmp/b/bin/cuda_pi0_test --gtest_filter='CudaPi0Wgmma.TheInt8*' > $R/pi0_w8_test.log 2>&1; echo "pi0 engine int8 test rc=$?"; grep -E "int8 weights vs|OK \]|FAILED|Failure" $R/pi0_w8_test.log | head
timeout 240 /tmp/b/bin/cuda_groot_test --gtest_filter='*TheWarpgroupGemmsAgreeWithBlas*' > $R/groot_w8_test.log 2>&1; echo "groot engine test rc=$?"; grep -E "int8 weights vs|OK \]|FAILED|Failure" $R/groot_w8_test.log | head
timeout 200 /tmp/b/bin/edgevla_bench_cuda_w8 --rounds 5 > $R/w8_bench.jsonl 2> $R/w8_bench.err; echo "w8 bench rc=$?"
python3 - $R/w8_bench.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d = json.loads(l)
        print(f"{d['shape']:10s} parts {d['parts']}  bf16 {d['bf16_us']}  int8 {d['w8_us']}  ratio {d['w8_over_bf16']}")
PY
wait; date
. bench/results/issue9_h200/show.sh
for round in 1 2; do
  for v in 0 1; do
    EDGEVLA_CUDA_WGMMA_W8=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_w8_${v}_$round.out 2> $R/pi0_w8_${v}_$round.err
    echo "pi0.5 int8 weights=$v"; show $R/pi0_w8_${v}_$round.out
    EDGEVLA_CUDA_WGMMA_W8=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_w8_${v}_$round.out 2> $R/groot_w8_${v}_$round.err
    echo "groot int8 weights=$v"; show $R/groot_w8_${v}_$round.out
  done
done
date
