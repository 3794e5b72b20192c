#!/bin/bash
# Run 53, call 2 (~6 min): the heads kernel on by default, the cross blocks' clusters sized to what
# the device holds at once (call 1's clusters of four: −0.02 ms only, a second wave suspected).
# The whole GPU suite; GR00T with EDGEVLA_CUDA_WGMMA_HEADS=0 / 1 alternated twice, self / cross
# alone; then PyTorch's GR00T (eager + graph, torch.compile + graph, the floor) in the same run.
# Predicted: suite all passed; cross alone −0.1 ms (call 1: −0.02), all −0.3 ms a head.
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
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "rel-L2" /tmp/b/Testing/Temporary/LastTest.log | grep -i "heads\|clusters" | head -30
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1 self cross; do
  EDGEVLA_CUDA_WGMMA_HEADS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot HEADS=$v rc=$?"; show $R/groot_$v.out; grep -h "attention blocks as one" $R/groot_$v.err | sed 's/.*chained; //' | head -1
done
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    print('views', d['views'], {k: v['e2e_ms']['median'] for k, v in d['variants'].items()}, 'floor', fl)
PY
cd $REPO
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_after.out 2> $R/groot_after.err
echo "groot (defaults, after PyTorch)"; show $R/groot_after.out
date
