#!/bin/bash
# Run 55, call 4 (~5 min, the session's last device minutes): GR00T's LLM attention (causal over
# packed keys, block b: the warpgroup kernel does not take it) is 13.5 µs a layer at two views in
# call 3's breakdown against ~10.7 for PyTorch's cuDNN; its launch shape under the existing knobs:
# EDGEVLA_ATTN_NARROW 2 (default) / 0 and EDGEVLA_ATTN_MIN_TILES 3 (default) / 2 / 5, alternated.
# Predicted: within ±0.02 ms of each other (the shape rules were tuned on these calls in run 29).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
$E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?
date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for cfg in "NARROW=2" "NARROW=0" "MIN_TILES=2" "MIN_TILES=5"; do
    env EDGEVLA_ATTN_$cfg EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_${cfg}_$round.out 2> $R/groot_${cfg}_$round.err
    echo "groot $cfg rc=$?"; show $R/groot_${cfg}_$round.out
  done
done
date
