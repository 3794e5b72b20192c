#!/bin/bash
# Run 53, call 4 (~6 min): GR00T's ff1 in feature tiles of 48 (the heads kernel's GEMM form:
# 128 blocks over all of k, against wgmma_gemm's 96 blocks of 64) — its tests and GR00T's, then
# EDGEVLA_CUDA_WGMMA_FF1_TILE=48 / 64 alternated twice, EDGEVLA_WGMMA_AHEAD 2 / 6 once each at the
# new defaults, and PyTorch's GR00T once more in the same run.
# Predicted: ff1 9.2 -> 7-7.5 us a block-step (a third more multiprocessors streaming): head
# -0.15 to -0.25 ms.
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
grep -h "rel-L2\|bits" /tmp/b/Testing/Temporary/LastTest.log | grep -i "heads\|tiles\|bits" | head -30
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 48 64 48 64 a2 a6; do
  T=$v; A=4; case $v in a2) T=48; A=2;; a6) T=48; A=6;; esac
  EDGEVLA_WGMMA_AHEAD=$A EDGEVLA_CUDA_WGMMA_FF1_TILE=$T EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot $v rc=$?"; show $R/groot_$v.out; grep -h "attention blocks as one" $R/groot_$v.err | sed 's/.*chained; //' | head -1
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
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_after.out 2> $R/groot_after.err
echo "groot (defaults, after PyTorch)"; show $R/groot_after.out
date
