#!/bin/bash
# Run 34 call 1: run 33's prepared probe (three ways of bringing A into the warpgroup GEMM's
# tiled order), the GPU suite on this tip (run 33's last clean-up commit had not run on a GPU;
# the warpgroup GEMM now brings A by cp.async and has f32 k parts), the kernel bench with the
# warpgroup GEMM beside cuBLASLt, and pi0.5 E2E with EDGEVLA_CUDA_WGMMA off / gate_up / all /
# qkv,gate_up,down.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run34/call1/s14call1.sh $R/; tar czf $OUT/results_s14c1.tgz -C $R . ; }
trap finish EXIT
date
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/results/issue9_h200/run33/next/wgmma_a_modes_probe.cu -o /tmp/probe > $R/probe_build.log 2>&1 && { timeout 120 /tmp/probe > $R/probe.jsonl 2>&1; echo "probe rc=$?"; cat $R/probe.jsonl; }
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 300 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; tail -5 $R/ctest_gpu.log)
wait; date
grep -h "rel-L2 vs blas\|k parts\|rel-L2" $R/ctest_gpu.log | grep -i "wgmma\|blas\|parts" | head -20
/tmp/b/bin/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep "rel-L2\|OK\|FAIL" $R/wgmma_test.log | head -30
timeout 120 $BP/edgevla_bench_cuda_kernels --only gemm > $R/kernels.out 2> $R/kernels.err; echo "kernels rc=$?"
grep '"gemm"' $R/kernels.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d['shape'], 'cublaslt', d['cublaslt_us'], 'read', d['read_only_us'], 'blas_pick', d['blas_pick_us'], 'wgmma', d['wgmma'])"
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for W in 0 gate_up all qkv,gate_up,down gate_up,down; do
  EDGEVLA_CUDA_WGMMA=$W EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 50 --warmup 10 > $R/pi0_$W.out 2> $R/pi0_$W.err; echo "pi0 WGMMA=$W rc=$?"; show $R/pi0_$W.out
done
EDGEVLA_CUDA_WGMMA=0 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 50 --warmup 10 > $R/pi0_0b.out 2> $R/pi0_0b.err; echo "pi0 WGMMA=0 again"; show $R/pi0_0b.out
date
