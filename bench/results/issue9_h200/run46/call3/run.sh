#!/bin/bash
# Run 46 call 3 (~7 min): pi0.5's head following the backbone layer by layer
# (EDGEVLA_CUDA_LAYER_FENCES=1): the backbone hands its own cache out with an event per layer
# (external record nodes in its graph) and returns without finishing its stream; the head's first
# Euler step waits for layer l's event (external wait nodes in its graph) before its attention
# reads layer l. Call 2's probe: a 1-step head run beside the backbone hid 0.16-0.20 ms (1 view)
# and 0.09-0.26 ms (3 views). Predicted: E2E −0.1 to −0.2 ms at both view counts (the first step
# trails the backbone by a layer, and slows it a little).
# 1. the whole GPU suite (new CudaPi0Layered test) while the checkpoint is written;
# 2. pi0.5 E2E with layer fences on / off, alternated twice; 3. PyTorch beside it (same run).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
grep -h "layered vs whole" /tmp/b/Testing/Temporary/LastTest.log | head -12
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for lf in 1 0; do
    EDGEVLA_CUDA_LAYER_FENCES=$lf EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_lf${lf}_$round.out 2> $R/pi0_lf${lf}_$round.err
    echo "pi0.5 layer fences $lf rc=$?"; show $R/pi0_lf${lf}_$round.out
  done
done
date
cd $REPO/bench
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for l in open(f"{R}/torch_pi0.jsonl"):
    d = json.loads(l)
    print('torch pi0 views', d['views'], {k: v['e2e_ms']['median'] for k, v in d['variants'].items()})
PY
