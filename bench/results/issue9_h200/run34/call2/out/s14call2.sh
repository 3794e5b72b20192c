#!/bin/bash
# Run 34 call 2: the warpgroup GEMM with A by one bulk tensor copy (TMA, 128-byte swizzle) a
# stage: its tests, the kernel bench beside cuBLASLt, the pi0.5 engine test, and pi0.5 E2E with
# EDGEVLA_CUDA_WGMMA off and on for several sets of GEMMs.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run34/call2/s14call2.sh $R/; tar czf $OUT/results_s14c2.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 60 $BP/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep "rel-L2\|OK \]\|FAILED\|Failure\|Expected\|Which" $R/wgmma_test.log | head -40
timeout 120 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma test rc=$?"; grep "run \|OK \]\|FAILED" $R/pi0_wgmma_test.log
(cd /tmp/b && timeout 200 ctest -R "Skinny|Gemm|Wgmma" -j4 > $R/ctest_gemm.log 2>&1; echo "ctest gemm rc=$?"; tail -4 $R/ctest_gemm.log)
timeout 120 $BP/edgevla_bench_cuda_kernels --only gemm > $R/kernels.out 2> $R/kernels.err; echo "kernels rc=$?"
grep '"gemm"' $R/kernels.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d['shape'], 'cublaslt', d['cublaslt_us'], 'read', d['read_only_us'], 'blas_pick', d['blas_pick_us'], 'wgmma', d['wgmma'])"
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for W in 0 gate_up gate_up,down all qkv,gate_up,down o,gate_up,down 0; do
  EDGEVLA_CUDA_WGMMA=$W EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 50 --warmup 10 > $R/pi0_$W.out 2> $R/pi0_$W.err; echo "pi0 WGMMA=$W rc=$?"; show $R/pi0_$W.out
done
date
