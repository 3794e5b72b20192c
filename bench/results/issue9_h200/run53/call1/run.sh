#!/bin/bash
# Run 53, call 1 (~6 min): the heads kernel (kernels/wgmma_heads.cu: a head's q|k|v, or cross q,
# and its attention in one clustered kernel) — its own tests and GR00T's engine tests, then GR00T's
# full head with EDGEVLA_CUDA_WGMMA_HEADS=0 / 1 alternated twice, and self / cross alone.
# Predicted: tests pass; head −0.3 to −0.5 ms at 1 view (run 44 call 2: attention 5.4 µs and
# q|k|v 4.8 µs a block-step; the fused kernel ~6-7 µs against ~11 with the hand-over).
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
(cd /tmp/b && timeout 200 ctest -R "CudaWgmmaHeads|CudaGroot|CudaWgmmaGemm" -j6 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest.log | head -20)
grep -h "rel-L2" /tmp/b/Testing/Temporary/LastTest.log | grep -i "self\|cross\|heads" | head -40
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1 self cross; do
  EDGEVLA_CUDA_WGMMA_HEADS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot HEADS=$v rc=$?"; show $R/groot_$v.out; grep -h "heads kernel\|attention blocks" $R/groot_$v.err | head -2
done
date
