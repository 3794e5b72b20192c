#!/bin/bash
# Run 33 call 7: the warpgroup GEMM in the engine (kernels/wgmma_gemm.*; pi0.5's gate|up with its
# GeGLU, EDGEVLA_CUDA_WGMMA=1): its kernel tests, the engine test against Blas and the CPU, and
# pi0.5 E2E with it and without in the same call. Little device time left: one pass each.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r7; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run33/call7/s13call7.sh $R/; tar czf $OUT/results_s13c7.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(timeout 100 $BP/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep -E "rel-L2|OK|FAILED|PASSED|SKIPPED" $R/wgmma_test.log | head -20) &
(timeout 150 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma.*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma test rc=$?"; grep -E "^\[run|OK|FAILED|PASSED|SKIPPED" $R/pi0_wgmma_test.log | head -10) &
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for w in 1 0; do
  EDGEVLA_CUDA_WGMMA=$w EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_w$w.out 2> $R/pi0_w$w.err; echo "pi0 wgmma=$w rc=$?"; show $R/pi0_w$w.out
done
date
