#!/bin/bash
# Run 54, call 1 (~9 min): the whole GPU suite at run 53's last code (the w8 producer refactor and
# the RESIDUAL engine test, neither run on a GPU yet); EDGEVLA_CUDA_WGMMA_RESIDUAL 0 / 1 alternated
# twice (run 53's prepared call_a); PyTorch's GR00T once in the same run; then where GR00T's
# backbone spends its time at two views, edgevla's kernels and torch.compile's (Nsight Compute,
# isolated kernel times), since two views need −0.4 ms and the backbone there is 3.37 against 3.73.
# Predicted: 124/124 + 1; RESIDUAL head −0.05 to −0.15 ms.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
zcat $R/LastTest.log.gz | grep -h "residual add\|RESIDUAL\|heads kernel vs" | head -12
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WGMMA_RESIDUAL=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot RESIDUAL=$v rc=$?"; show $R/groot_$v.out
done
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    print('views', d['views'], {k: (v['e2e_ms']['median'], v['backbone_ms']['median']) for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms'), 'head steps floor', fl.get('head_steps_floor_ms'))
PY
cd $REPO
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/ncu_groot_backbone_v2.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 2 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot backbone v2 rc=$?"; date
cd $REPO/bench
timeout 150 $NCU --nvtx-include "torch.compile.backbone/" --log-file $R/ncu_torch_backbone_v2.csv python3 torch_groot.py --checkpoint /tmp/groot --views 2 --variants compile --repeat 2 --warmup 1 --profile-ranges > /dev/null 2> $R/torch_ncu.err
echo "ncu torch backbone v2 rc=$?"; date
cd $REPO
python3 bench/kernel_breakdown.py edgevla_v2=$R/ncu_groot_backbone_v2.csv torch_compile_v2=$R/ncu_torch_backbone_v2.csv --top 30 > $R/breakdown_backbone_v2.txt 2>&1
head -90 $R/breakdown_backbone_v2.txt
date
