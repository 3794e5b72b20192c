#!/bin/bash
# Run 61 call 4 (~8 min, the session's last device minutes): EDGEVLA_ATTN_WG128=3, the new default:
# the towers' attention on one warpgroup a block where those blocks fit one wave (GR00T one view:
# 96 blocks; pi0.5 one view: 64), else two (GR00T two views, pi0.5 three: 192). Call 1's wg1 arm:
# 6.492, 6.505 vs 6.540, 6.525 ms at one view; run 58 call 3 found no gain (6.583, 6.537 vs 6.549,
# 6.551). Predicted −0.01 to −0.04 ms at one view, 0 at two / three. GPU suite first; then def vs
# wg2 (EDGEVLA_ATTN_WG128=2, the old default), alternated, GR00T and pi0.5.
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
(cd /tmp/b && timeout 250 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2 3; do for arm in def wg2; do [ $SECONDS -gt 470 ] && break 2
  unset EDGEVLA_ATTN_WG128
  [ $arm = wg2 ] && export EDGEVLA_ATTN_WG128=2
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi05.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi05_$arm.$SECONDS.out 2> $R/pi05_$arm.err
  echo "pi05 $arm rc=$?"; show $(ls -t $R/pi05_$arm.*.out | head -1)
done; done
date
