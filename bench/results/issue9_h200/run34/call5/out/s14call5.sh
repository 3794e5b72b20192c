#!/bin/bash
# Run 34 call 5: the two engine-level warpgroup tests with shared GEMM picks (a plan file), the
# GPU suite, and k-part caps for both heads.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r5; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run34/call5/s14call5.sh $R/; tar czf $OUT/results_s14c5.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
timeout 100 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma rc=$?"; grep "run \|FAILED\|Failure" $R/pi0_wgmma_test.log | head
timeout 100 $BP/cuda_groot_test --gtest_filter='*Warpgroup*' > $R/groot_wgmma_test.log 2>&1; echo "groot wgmma rc=$?"; grep "warpgroup vs\|FAILED\|Failure" $R/groot_wgmma_test.log | head -12
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for P in 8 4 2; do
  EDGEVLA_CUDA_WGMMA_PARTS=$P EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 50 --warmup 10 > $R/pi0_p$P.out 2> $R/pi0_p$P.err; echo "pi0 parts $P"; show $R/pi0_p$P.out
  EDGEVLA_CUDA_WGMMA_PARTS=$P EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 50 --warmup 10 > $R/groot_p$P.out 2> $R/groot_p$P.err; echo "groot parts $P"; show $R/groot_p$P.out
done
date
