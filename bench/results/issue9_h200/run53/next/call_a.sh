#!/bin/bash
# Prepared in run 53 for the next session's first call (~6 min): GR00T's out and ff2 adding their
# product into the residual stream in their epilogue (EDGEVLA_CUDA_WGMMA_RESIDUAL=1: f32 out with
# the stream as addend, k split over a cluster of four, 96 blocks; the LayerNorms after them read
# the stream alone, 313 KB, instead of it and five k parts, 1.9 MB) — built after run 53's device
# time, not yet run on a GPU. Its engine test and the heads kernel's, then RESIDUAL=0 / 1
# alternated twice, then PyTorch's GR00T once in the same run.
# Predicted: tests pass (rel-L2 to the k parts' actions ~1e-3); head −0.05 to −0.15 ms (the norms
# 3.4 µs isolated, call 5; the cluster's reduction may cost what the parts' writes saved: run 35's
# k slices lost on pi0.5's q|k|v at 40 blocks).
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
(cd /tmp/b && timeout 200 ctest -R "CudaGroot|CudaWgmma|heads" -j6 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest.log | head -20)
grep -h "residual add\|heads kernel vs" /tmp/b/Testing/Temporary/LastTest.log | head -12
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WGMMA_RESIDUAL=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot RESIDUAL=$v rc=$?"; show $R/groot_$v.out; grep -h "RESIDUAL" $R/groot_$v.err | head -1
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
date
