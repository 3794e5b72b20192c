#!/bin/bash
# Run 62 call 2: prompt rows padded to 8, 4 or 1 instead of 16 (EDGEVLA_CUDA_ROW_BUCKET). GR00T's
# LLM then runs 216 / 212 / 212 rows at two views instead of 224 (136 / 132 / 131 instead of 144 at
# one), the head's cross keys 224 / 216 / 212 instead of 240; pi0.5's prefix 456 / 968 instead of
# 464 / 976 (8, 4 and 1 the same there). Predicted: GR00T −0.01 to −0.04 ms, pi0.5 −0.02 to −0.05;
# a GEMM pick at the new row counts could be slower than at the old. The GPU suite first (new:
# both engines' CPU comparisons and graph replays at bucket 1).
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
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for b in 16 8 4 1 16 8 4 1; do [ $SECONDS -gt 480 ] && break
  EDGEVLA_CUDA_ROW_BUCKET=$b EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_b$b.$SECONDS.out 2>&1
  echo "groot bucket $b rc=$?"; show $(ls -t $R/groot_b$b.*.out | head -1)
done
for b in 16 8 16 8; do [ $SECONDS -gt 510 ] && break
  EDGEVLA_CUDA_ROW_BUCKET=$b EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_b$b.$SECONDS.out 2>&1
  echo "pi0.5 bucket $b rc=$?"; show $(ls -t $R/pi0_b$b.*.out | head -1)
done
date
