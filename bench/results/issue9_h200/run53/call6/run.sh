#!/bin/bash
# Run 53, call 6 (~5 min): the session's last code (the producer's walk and the k slices' sums
# shared by wgmma_gemm and wgmma_heads; PTX the same but for address arithmetic's order): the whole
# GPU suite, then GR00T at the defaults and with HEADS=0 once each (unchanged from call 2 expected).
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
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 1 0; do
  EDGEVLA_CUDA_WGMMA_HEADS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot HEADS=$v rc=$?"; show $R/groot_$v.out
done
date
