#!/bin/bash
# Run 33 call 3: where the GR00T action head's time goes, kernel by kernel (1 and 2 views), and
# GR00T's backbone and pi0.5's head again at the tip (Nsight Compute, the plain run's GEMM picks).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run33/call3/s13call3.sh $R/; gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results_s13c3.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
# Plain runs first: they write the GEMM plan files the profiled runs reuse.
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot.out 2> $R/groot.err
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 30 --warmup 5 > $R/pi0.out 2> $R/pi0.err
grep -h '^{' $R/groot.out $R/pi0.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' ', d['bench'], 'views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"
date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for v in 1 2; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 150 $NCU --nvtx-include "edgevla.groot.action_head/" --log-file $R/ncu_groot_head_v$v.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views $v --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
  echo "ncu groot head v$v rc=$?"; date
done
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/ncu_groot_backbone_v1.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot backbone rc=$?"; date
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 150 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_head_v1.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu pi0 head rc=$?"; date
python3 bench/kernel_breakdown.py groot_head_v1=$R/ncu_groot_head_v1.csv groot_head_v2=$R/ncu_groot_head_v2.csv groot_backbone_v1=$R/ncu_groot_backbone_v1.csv pi0_head_v1=$R/ncu_pi0_head_v1.csv --top 30 > $R/breakdown.txt 2>&1
head -150 $R/breakdown.txt
date
