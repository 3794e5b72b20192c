#!/bin/bash
# Run 59 call 1: the suite at 471dfde + the tower lanes (new tests); the vision tower's views on
# concurrent streams (EDGEVLA_CUDA_TOWER_LANES) against one pass, and GR00T's LLM on the warpgroup
# GEMM (EDGEVLA_CUDA_WGMMA_BACKBONE=1, last measured in run 37), alternated twice.
# Predicted: suite passes; lanes GR00T backbone at two views 3.20 → 2.95-3.10 ms (E2E −0.1 to
# −0.25), pi0.5 three views −0.1 to −0.4 ms; one view unchanged (one lane).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 260 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
grep -h "lanes:" /tmp/b/Testing/Temporary/LastTest.log | head -20
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for arm in 1 2 w 1 2 w; do [ $SECONDS -gt 470 ] && break
  case $arm in 1) env="EDGEVLA_CUDA_TOWER_LANES=1";; 2) env="EDGEVLA_CUDA_TOWER_LANES=2";; w) env="EDGEVLA_CUDA_WGMMA_BACKBONE=1";; esac
  env $env EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.out 2> $R/groot_$arm.err
  echo "groot $env rc=$?"; show $R/groot_$arm.out
done
date
for arm in 1 3 1 3; do [ $SECONDS -gt 560 ] && break
  env EDGEVLA_CUDA_TOWER_LANES=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$arm.out 2> $R/pi0_$arm.err
  echo "pi0.5 lanes $arm rc=$?"; show $R/pi0_$arm.out
done
date
