#!/bin/bash
# Prepared in run 59 for the next session's first call (~8 min, not yet run): the GPU suite, then
# where GR00T's two-view time goes now, kernel class by kernel class (Nsight Compute, isolated
# kernel times, one profiled run), edgevla's backbone and head against torch.compile's, at run
# 59's defaults (run 54 call 1 did this before the head-dim-128 warpgroup attention, the overlap
# and run 58's forms). GR00T's two views are 0.12-0.18 ms short of 1.5x; the ranking says where.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 250 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for stage in backbone action_head; do [ $SECONDS -gt 420 ] && break
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $NCU --nvtx-include "edgevla.groot.$stage/" --log-file $R/ncu_groot_${stage}_v2.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 2 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
  echo "ncu edgevla $stage rc=$?"; date
done
cd $REPO/bench
[ $SECONDS -lt 450 ] && { timeout 150 $NCU --nvtx-include "torch.compile.backbone/" --log-file $R/ncu_torch_backbone_v2.csv python3 torch_groot.py --checkpoint /tmp/groot --views 2 --variants compile --repeat 2 --warmup 1 --profile-ranges > /dev/null 2> $R/torch_ncu.err; echo "ncu torch backbone rc=$?"; }
cd $REPO
python3 bench/kernel_breakdown.py edgevla_backbone=$R/ncu_groot_backbone_v2.csv torch_compile_backbone=$R/ncu_torch_backbone_v2.csv --top 30 > $R/breakdown_backbone_v2.txt 2>&1
python3 bench/kernel_breakdown.py edgevla_head=$R/ncu_groot_action_head_v2.csv --top 30 > $R/breakdown_head_v2.txt 2>&1
head -90 $R/breakdown_backbone_v2.txt; head -50 $R/breakdown_head_v2.txt
date
