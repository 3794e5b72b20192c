#!/bin/bash
# Run 51, call 5 (the session's last ~5 device minutes; run again as call 6 after the side GEMMs got their own cuBLASLt workspace): GR00T's cross keys|values made block by
# block on a side stream beside the first step (EDGEVLA_CUDA_CROSS_KV_ASIDE=1, new, off by
# default). Only the targets needed are built. 1. The new GPU test (f32 within 1e-4 of the CPU,
# bf16 within the bar and near the default, replays) and the head's CPU comparison. 2. Alternated
# twice against the default. Predicted: head -0.02 to -0.05 ms (call 4 put the two GEMMs at
# 0.04-0.07 ms ahead of the first step).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=$OUT/r; mkdir -p $R
date
export CUDAARCHS=90
EDGEVLA_TARGETS="edgevla edgevla_bench_cuda_groot cuda_groot_test" bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1; echo "build rc=$?"
grep -q "FAILED" /tmp/build.log && { grep -A12 "FAILED" /tmp/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin; E=$BP/edgevla
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 100 ctest -R "CudaGroot\.(CrossKeys|MatchesTheCpu)" -j4 --output-on-failure > $R/ctest_groot.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_groot.log | head; grep -h "keys|values beside" $R/ctest_groot.log | head -20)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for v in 0 1; do
    EDGEVLA_CUDA_CROSS_KV_ASIDE=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_aside${v}_$round.out 2> $R/groot_aside${v}_$round.err
    echo "groot cross kv aside $v round $round"; show $R/groot_aside${v}_$round.out
  done
done
date
