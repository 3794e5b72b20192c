#!/bin/bash
# Run 41 call 5: how many weight stages the warpgroup GEMM copies before the chain's wait
# (EDGEVLA_WGMMA_AHEAD: 8, the whole ring, the default; 4; 2), since call 2-4 suggested that the
# kernel ahead's round trips pay for the next GEMM's early copies. pi0.5 and GR00T alternated twice;
# then the GPU suite at this session's last code (the norm epilogue's tests in it).
exec > $OUT/run.log 2>&1
R=$OUT/res; mkdir -p $R
. bench/results/issue9_h200/show.sh
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -80; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
for round in 1 2; do
  for a in 8 4 2; do
    EDGEVLA_WGMMA_AHEAD=$a EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_a${a}_$round.out 2> $R/pi0_a${a}_$round.err
    echo "pi0.5 ahead=$a rc=$?"; show $R/pi0_a${a}_$round.out
    EDGEVLA_WGMMA_AHEAD=$a EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_a${a}_$round.out 2> $R/groot_a${a}_$round.err
    echo "groot ahead=$a rc=$?"; show $R/groot_a${a}_$round.out
  done
done
date
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
date
