#!/bin/bash
# Run 56, call 5 (~4 min, the session's last device minutes): the many-rows kernel off by default
# (offered with EDGEVLA_CUDA_WIDE_GEMM=1, read by each Blas at its creation); the GEMM tests and the
# wide GEMM's; the wide bench at 648 rows with cuBLASLt given the bf16 bias as the engines give it.
# Predicted: tests pass; cuBLASLt's rows at 648 within 5 % of the engine plans' (q|k|v 11.1, fc1 13.0 µs).
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
date
(cd /tmp/b && timeout 150 ctest -R "CudaWideGemm|CudaKernels\.(Gemm|PlanFile|Blas|KSplit|Skinny)|CudaEnvKnobs" -j6 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest.log | head -20)
timeout 100 /tmp/b/bin/edgevla_bench_cuda_wide_gemm --repeat 3 --rows 648 > $R/wide_bench_648.jsonl 2> $R/wide_bench_648.err; echo "wide bench rc=$?"
grep summary $R/wide_bench_648.jsonl
date
