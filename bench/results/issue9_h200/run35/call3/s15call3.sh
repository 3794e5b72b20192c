#!/bin/bash
# Run 35 call 3: the k-slice forms as their own kernel instances (call 2 found the one-slice
# kernel 1.7 µs a launch slower with the reduction compiled into it), the ring back to 8 stages:
# kernel tests, kernel bench, both heads over split caps.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
finish() { gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results_s15c3.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
timeout 90 $BP/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep "rel-L2\|OK \]\|FAILED\|Failure" $R/wgmma_test.log | head -40
timeout 150 $BP/edgevla_bench_cuda_kernels --only gemm > $R/kernels.out 2> $R/kernels.err; echo "kernels rc=$?"
grep '"gemm"' $R/kernels.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d['shape'], 'cublaslt', d['cublaslt_us'], 'read', d['read_only_us'], 'floor', d['weight_floor_us'], 'wgmma', d['wgmma'])"
wait; date
timeout 150 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma rc=$?"; grep "run \|FAILED\|Failure" $R/pi0_wgmma_test.log | head
timeout 150 $BP/cuda_groot_test --gtest_filter='*Warpgroup*' > $R/groot_wgmma_test.log 2>&1; echo "groot wgmma rc=$?"; grep "warpgroup vs\|FAILED\|Failure" $R/groot_wgmma_test.log | head
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
pi0() { local n=$1 v=$2; shift 2
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views $v --repeat 40 --warmup 10 > $R/pi0_$n.out 2> $R/pi0_$n.err; echo "pi0 $n ($*) rc=$?"; show $R/pi0_$n.out; }
groot() { local n=$1 v=$2; shift 2
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views $v --repeat 40 --warmup 10 > $R/groot_$n.out 2> $R/groot_$n.err; echo "groot $n ($*) rc=$?"; show $R/groot_$n.out; }
pi0 base 1,3 EDGEVLA_CUDA_WGMMA_SPLIT=1
pi0 split4 1,3 EDGEVLA_CUDA_WGMMA_SPLIT=4
groot base 1,2 EDGEVLA_CUDA_WGMMA_SPLIT=1
groot split4 1,2 EDGEVLA_CUDA_WGMMA_SPLIT=4
grep -h "warpgroup" $R/pi0_split4.err $R/groot_split4.err | head -4
date
pi0 split2 1,3 EDGEVLA_CUDA_WGMMA_SPLIT=2
groot split2 1,2 EDGEVLA_CUDA_WGMMA_SPLIT=2
pi0 base2 1 EDGEVLA_CUDA_WGMMA_SPLIT=1
groot base2 1 EDGEVLA_CUDA_WGMMA_SPLIT=1
date
