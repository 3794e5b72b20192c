#!/bin/bash
# Run 46 call 2 (~5 min): can the device hide a pi0.5 head step under the backbone? pi0.5's
# expert layer i reads only the prefix K/V of backbone layer i, so the head's first Euler step
# could follow the backbone layer by layer (per-layer fences) instead of waiting for all of it.
# Probe before building that (bench/cuda_pi0.cpp --overlap-probe 1): the backbone and a 1-, 2- or
# 10-step head run at once from two host threads, each engine on its own stream, against each
# alone; with the head's stream at the device's greatest priority, or the backbone's, or neither
# (EDGEVLA_CUDA_PRIORITY). Predicted: a 1-step head (~0.63 ms) 40-70 % hidden (0.25-0.45 ms),
# more with the head's stream first; the backbone is compute-bound at 3 views, so less there.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/config.json ] || $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo "pi05 init rc=$?"
date
for prio in none action_head backbone; do
  v=""; [ $prio != none ] && v=$prio
  env ${v:+EDGEVLA_CUDA_PRIORITY=$v} EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 --overlap-probe 1 > $R/pi0_prio_$prio.out 2> $R/pi0_prio_$prio.err
  echo "priority: $prio rc=$?"
  grep -o '"views": [0-9]*\|"e2e_ms": {"median": [0-9.]*' $R/pi0_prio_$prio.out | paste - - 
  grep overlap_probe $R/pi0_prio_$prio.out | sed 's/{"bench": "edgevla_cuda_pi0_overlap_probe", //'
done
date
