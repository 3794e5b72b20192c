#!/bin/bash
# Run 46 call 5 (~7.5 min, the session's last device minutes): layer fences on by default
# (EDGEVLA_CUDA_LAYER_FENCES=0 turns them off). 1. the whole GPU suite at that default, with
# CudaPi0Layered fixed (call 4's pi0 runs 2 and 4 differed by 1.7e-3 / 2.9e-3 only because the
# second pair timed its own GEMM picks for the new step counts: now it is opened after the first
# pair has written every pick to the plan file); 2. pi0.5 E2E on / off; 3. torch.compile + graph
# in the same run. Call 4: 10.76, 10.77 vs 11.05, 11.07 ms (1 view), 14.59, 14.64 vs 14.74, 14.84.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r5; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 200 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
grep -h "layered vs whole" /tmp/b/Testing/Temporary/LastTest.log | head -12
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for lf in 1 0; do
  EDGEVLA_CUDA_LAYER_FENCES=$lf EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_lf${lf}.out 2> $R/pi0_lf${lf}.err
  echo "pi0.5 layer fences $lf rc=$?"; show $R/pi0_lf${lf}.out
done
date
cd $REPO/bench
timeout 150 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for l in open(f"{R}/torch_pi0.jsonl"):
    d = json.loads(l)
    print('torch pi0 views', d['views'], {k: v['e2e_ms']['median'] for k, v in d['variants'].items()}, 'floor', d.get('floor', {}).get('floor_ms'))
PY
