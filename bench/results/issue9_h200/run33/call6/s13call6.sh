#!/bin/bash
# Run 33 call 6: call 5's warpgroup GEMM probe with pi0.5's GeGLU applied in its epilogue (weight
# rows permuted at upload so each thread holds a gate and its up), against the same GEMM writing
# bf16 followed by a separate GeGLU kernel, in one process; plus two k-heavy shapes unsplit.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r6; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run33/call6/s13call6.sh $R/; tar czf $OUT/results_s13c6.tgz -C $R . ; }
trap finish EXIT
date
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/results/issue9_h200/run33/call6/wgmma_geglu_probe.cu -o $R/probe > $R/probe_build.log 2>&1 || { cat $R/probe_build.log; exit 1; }
timeout 60 $R/probe > $R/probe.jsonl 2>&1; echo "probe rc=$?"; cat $R/probe.jsonl
timeout 60 $R/probe > $R/probe_again.jsonl 2>&1; echo "probe again"; cat $R/probe_again.jsonl
rm -f $R/probe
date
