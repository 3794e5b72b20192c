#!/bin/bash
# Run 33 call 5: a few-rows GEMM on warpgroup multiplies with tiles laid out at upload
# (wgmma_gemm_probe.cu: one producer warp, two contiguous bulk copies a stage, one consumer
# warpgroup), against cuBLASLt's pick for the same shapes timed the same way
# (edgevla_bench_cuda_kernels --only gemm) in the same call.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r5; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run33/call5/s13call5.sh $R/; tar czf $OUT/results_s13c5.tgz -C $R . ; }
trap finish EXIT
date
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/results/issue9_h200/run33/call5/wgmma_gemm_probe.cu -o $R/probe > $R/probe_build.log 2>&1 || { cat $R/probe_build.log; exit 1; }
timeout 60 $R/probe > $R/probe.jsonl 2>&1; echo "probe rc=$?"; cat $R/probe.jsonl
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
date
for sh in gate_up qkv; do
  timeout 60 /tmp/b/bin/edgevla_bench_cuda_kernels --only gemm --shape $sh > $R/cublaslt_$sh.jsonl 2>&1; echo "bench $sh rc=$?"
  grep '"bench": "gemm"' $R/cublaslt_$sh.jsonl | head -3
done
timeout 60 $R/probe > $R/probe_again.jsonl 2>&1; echo "probe again"; cat $R/probe_again.jsonl
date
