#!/bin/bash
# Run 55, call 5 (the session's last ~7 device minutes): the vision towers' LayerNorm one warp a row
# (EDGEVLA_CUDA_NORM_WARP, 1152-wide rows: 5 chunks of 8 a lane, no barrier) against one block a
# row (4.7 µs a call at GR00T's 648 rows in call 3's breakdown). The GPU suite with it; NORM_WARP
# 0 / 1 alternated twice for GR00T, once for pi0.5.
# Predicted: suite 126/126; backbones −0.01 to −0.04 ms (54 calls a pass, ≤ 1 µs each in a chain).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 170 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_NORM_WARP=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot NORM_WARP=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 1; do
  EDGEVLA_CUDA_NORM_WARP=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 50 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 NORM_WARP=$v rc=$?"; show $R/pi0_$v.out
done
date
