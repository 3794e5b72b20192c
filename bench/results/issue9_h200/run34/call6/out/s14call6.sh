#!/bin/bash
# Run 34 call 6 (the session's last device minutes): RoPE in pi0.5's q|k|v epilogue (rows paired
# as for the GeGLU), its kernel test, the engine test, and the head with it and without.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r6; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run34/call6/s14call6.sh $R/; tar czf $OUT/results_s14c6.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 40 $BP/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep "rope\|OK \]\|FAILED\|Failure" $R/wgmma_test.log | head -20
timeout 60 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma rc=$?"; grep "run \|FAILED\|Failure" $R/pi0_wgmma_test.log | head -12
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for V in 1 0; do
  EDGEVLA_CUDA_WGMMA_ROPE=$V EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 50 --warmup 10 > $R/pi0_rope$V.out 2> $R/pi0_rope$V.err; echo "pi0 ROPE=$V"; show $R/pi0_rope$V.out
done
date
