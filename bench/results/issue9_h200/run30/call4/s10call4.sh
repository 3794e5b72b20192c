#!/bin/bash
# Session 2026-11-26g (run 30) call 4: where the backbones' time goes, kernel by kernel (pi0.5 at
# 1 and 3 views, GR00T at 1 view), at the tip.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { cp $REPO/.repro/s10call4.sh $R/; gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results_s10c4.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for v in 1 3; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 150 $NCU --nvtx-include "edgevla.pi0.backbone/" --log-file $R/ncu_pi0_backbone_v$v.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views $v --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
  echo "ncu pi0 backbone v$v rc=$?"
done
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/ncu_groot_backbone_v1.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot backbone rc=$?"; date
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0.out 2> $R/pi0.err
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 30 --warmup 5 > $R/groot.out 2> $R/groot.err
grep -h '^{' $R/pi0.out $R/groot.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'])"
python3 bench/kernel_breakdown.py pi0_backbone_v1=$R/ncu_pi0_backbone_v1.csv pi0_backbone_v3=$R/ncu_pi0_backbone_v3.csv groot_backbone_v1=$R/ncu_groot_backbone_v1.csv --top 25 > $R/breakdown_backbones.txt 2>&1
cat $R/breakdown_backbones.txt | head -120
date
