#!/bin/bash
# Run 33 call 4: pi0.5's gate|up GEMM split into k parts by Blas (f32, summed by geglu_parts)
# against the whole GEMM writing bf16 (EDGEVLA_CUDA_GATE_UP_PARTS=2 / 4 against 1): the pi0 GPU
# tests with parts asked for, then E2E alternated twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run33/call4/s13call4.sh $R/; tar czf $OUT/results_s13c4.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && EDGEVLA_CUDA_GATE_UP_PARTS=2 ctest -L gpu -R 'Pi0|pi0' -j4 --output-on-failure > $R/gpu_ctest_parts2.log 2>&1; echo "gpu ctest (pi0, parts 2) rc=$?"; tail -4 $R/gpu_ctest_parts2.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/gpu_ctest_parts2.log | head
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for i in 1 2; do
  for p in 1 2 4; do
    EDGEVLA_CUDA_GATE_UP_PARTS=$p EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_p${p}_$i.out 2> $R/pi0_p${p}_$i.err; echo "pi0 gate|up parts<=$p round $i"; show $R/pi0_p${p}_$i.out
  done
done
date
