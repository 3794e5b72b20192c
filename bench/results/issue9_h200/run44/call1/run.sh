#!/bin/bash
# Run 44 call 1: run 43's call_a.sh as prepared, on a build where head dims up to 48 (GR00T's DiT)
# now run on their own HD 48 instance by default (EDGEVLA_ATTN_HD48), so both suites cover it.
# Prepared in run 43 for the next session's first call (~9 min): narrow attention blocks (32
# stacked rows, 2 warps a key group). Run 43 call 6 measured them (EDGEVLA_ATTN_NARROW=1) in the
# kernel bench (same outputs as the plan's) and in pi0.5's head (−0.13 ms at one view, −0.25 to
# −0.34 at three), but the GPU suite has not run with them: first the whole suite as it is (its
# new CudaAttention.NarrowBlocksMatch asks for them), then again with EDGEVLA_ATTN_NARROW=2 (every
# engine test on them where the 64-row blocks fill at most half the device), then both families'
# E2E with 0 / 2 / 1, alternated twice. If the suite passes and 2 is at least as fast as 1, the
# default becomes 2 (attention.cu, narrow_mode). Predicted: pi0.5 head −0.12 / −0.3 ms with 2;
# GR00T −0.02 to −0.05 ms (the DiT's attention 0.06-0.15 µs a call faster, SigLIP 0.65 µs, the
# LLM 0.5 µs).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rn; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 250 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/LastTest_default.log 2>/dev/null
(cd /tmp/b && EDGEVLA_ATTN_NARROW=2 timeout 250 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu_narrow2.log 2>&1; echo "ctest narrow=2 rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu_narrow2.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/LastTest_narrow2.log 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  [ $round -eq 2 ] && [ $SECONDS -gt 500 ] && break
  for n in 0 2 1; do
    EDGEVLA_ATTN_NARROW=$n EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_n${n}_$round.out 2> $R/pi0_n${n}_$round.err
    echo "pi0.5 narrow=$n"; show $R/pi0_n${n}_$round.out
    EDGEVLA_ATTN_NARROW=$n EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_n${n}_$round.out 2> $R/groot_n${n}_$round.err
    echo "groot narrow=$n"; show $R/groot_n${n}_$round.out
  done
done
date
