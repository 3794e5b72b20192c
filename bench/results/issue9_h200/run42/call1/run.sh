#!/bin/bash
# Prepared in run 41 for the next session (~8-9 min): the warpgroup GEMM on int8 weights
# (kernels/wgmma_w8.*, built after call 7, never run on a GPU). The GPU suite first, with its test
# (quantisation read back, products against the host, a replayed graph, refusals), the pi0 / pi0.5 engines on
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
# The whole GPU suite first: it holds the int8 tests and engine checks, and run 41's refactors
# after call 7 (the shared resident-cluster query, env_int) have not run on a GPU either.
(cd /tmp/b && timeout 280 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/ 2>/dev/null
grep -hE "rel-L2 .* against the dequantised|int8 weights vs" $R/LastTest.log | head -40
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
