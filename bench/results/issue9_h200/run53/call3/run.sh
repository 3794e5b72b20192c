#!/bin/bash
# Run 53, call 3 (~5 min): the self blocks' heads kernel over k thirds (each block q, k and v over
# a third of k, then the owner of one, the other two sending it their sums; 8 stages of 25 KB a
# block instead of 24 of 13 KB) against call 2's form (one projection a block over all of k,
# EDGEVLA_CUDA_WGMMA_HEADS_SELF=proj), alternated twice; HEADS=0 once for reference.
# Predicted: k thirds −0.05 to −0.15 ms a head (a third of the L2 reads of A, a third of the stages).
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
(cd /tmp/b && timeout 200 ctest -R "Heads|heads|CudaGroot" -j6 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest.log | head -20)
grep -h "rel-L2" /tmp/b/Testing/Temporary/LastTest.log | grep -i "heads\|self\|cross" | head -40
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in k proj k proj zero; do
  if [ $v = zero ]; then H=0; S=k; else H=1; S=$v; fi
  EDGEVLA_CUDA_WGMMA_HEADS=$H EDGEVLA_CUDA_WGMMA_HEADS_SELF=$S EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot $v rc=$?"; show $R/groot_$v.out; grep -h "attention blocks as one" $R/groot_$v.err | sed 's/.*chained; //' | head -1
done
date
