#!/bin/bash
# Prepared in run 56 for the next session's first call (~8 min). Not yet run on a GPU: LayerNorm
# with one block-wide reduction of merged moments (Chan's merge of each thread's count, mean and
# M2) instead of two passes, EDGEVLA_CUDA_NORM_ONE_PASS=1 (off by default); its tests (both forms
# in LayerNormMatchesReference and NormsAddResidualPartsAndBias); the new norm bench against a
# copy of the same bytes and against PyTorch's LayerNorm (bench/torch_norms.py).
# Why: GR00T's tower LayerNorm takes 4.7 µs a call at 648 rows (ncu, run 56 call 1: 54 calls,
# 254 µs at two views) to move 4.5 MB, ~1 TB/s: latency-bound, and the second reduction is one of
# its serial steps.
# Predicted: suite passes; one pass 0.3-0.6 µs faster a call; GR00T backbone −0.015 to −0.03 ms
# at two views; PyTorch's compiled LayerNorm 2-3 µs a call at 648 rows.
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
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
timeout 60 $BP/edgevla_bench_cuda_norms --repeat 5 > $R/norms.jsonl 2> $R/norms.err; echo "norms bench rc=$?"; cat $R/norms.jsonl | cut -c1-260
(cd $REPO/bench && timeout 150 python3 torch_norms.py --repeat 20 > $R/torch_norms.jsonl 2> $R/torch_norms.err; echo "torch norms rc=$?"; cat $R/torch_norms.jsonl)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_NORM_ONE_PASS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot NORM_ONE_PASS=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 1 0 1; do
  EDGEVLA_CUDA_NORM_ONE_PASS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 NORM_ONE_PASS=$v rc=$?"; show $R/pi0_$v.out
done
(cd /tmp/b && EDGEVLA_CUDA_NORM_ONE_PASS=1 timeout 200 ctest -L gpu -R "CudaGroot|CudaPi0" -j6 --output-on-failure > $R/ctest_engines_one_pass.log 2>&1; echo "engine tests (one pass) rc=$?"; grep -E "tests passed|Failed" $R/ctest_engines_one_pass.log | head)
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    print('views', d['views'], {k: (v['e2e_ms']['median'], v['backbone_ms']['median']) for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms'), 'head steps floor', fl.get('head_steps_floor_ms'))
PY
date
