#!/bin/bash
# Run 43 call 2 (~6 min): the GPU suite with the flag edges taken out (the code run 41's suite
# passed, plus run 42's int8 kernel that call 1 passed), then run 41's prepared k-part caps under
# four stages ahead (run42/next/call_b.sh: EDGEVLA_CUDA_WGMMA_PARTS, run-time only), each setting
# alternated twice. Predicted: pi0.5 within ±0.05 ms of 4 parts; GR00T at 4 / 6 parts within
# ±0.1 ms of 8.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 280 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/ 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for parts in 8 4 6; do
    EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_p${parts}_$round.out 2> $R/groot_p${parts}_$round.err
    echo "groot parts=$parts"; show $R/groot_p${parts}_$round.out
  done
  for parts in 4 8 2; do
    EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_p${parts}_$round.out 2> $R/pi0_p${parts}_$round.err
    echo "pi0.5 parts=$parts"; show $R/pi0_p${parts}_$round.out
  done
done
date
