#!/bin/bash
# Run 53, call 5 (~6 min, the session's last device minutes): where GR00T's head spends its time
# now, kernel by kernel (Nsight Compute, isolated kernel times, one profiled run at one view), with
# the heads kernel (the default) and without it (EDGEVLA_CUDA_WGMMA_HEADS=0); then run 52's prepared
# persistent-step probe (bench/results/issue9_h200/run52/next/call_a.sh's runs), for the next session.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
# The probe while the checkpoint is written.
timeout 90 $BP/edgevla_bench_cuda_persistent --repeat 20 --rounds 2 > $R/probe.out 2> $R/probe.err; echo "probe rc=$?"
grep '"round": 1' $R/probe.out | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(d['form'], d['us_per_step'], d.get('vs_chain'))"
for k in norm qkv out ff1 ff2; do
  timeout 40 $BP/edgevla_bench_cuda_persistent --only $k --repeat 20 --rounds 1 > $R/only_$k.out 2> $R/only_$k.err
  echo "only $k rc=$?"; grep -h "chain_gaps\|gaps_us" $R/only_$k.out | cut -c1-300
done
wait; date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for v in 1 0; do
  EDGEVLA_CUDA_WGMMA_HEADS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 150 $NCU --nvtx-include "edgevla.groot.action_head/" --log-file $R/ncu_groot_head_$v.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
  echo "ncu groot head HEADS=$v rc=$?"; date
done
python3 bench/kernel_breakdown.py heads_on=$R/ncu_groot_head_1.csv heads_off=$R/ncu_groot_head_0.csv --top 25 > $R/breakdown_groot_head.txt 2>&1
head -80 $R/breakdown_groot_head.txt
date
