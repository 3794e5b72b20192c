#!/bin/bash
# Prepared in run 33 for the next session's first device call (about 30 s, no edgevla build):
# the three ways of bringing A into the warpgroup GEMM's tiled order, side by side, twice.
exec > $OUT/run.log 2>&1
R=/tmp/rn; mkdir -p $R
trap 'tar czf $OUT/results_next.tgz -C $R .' EXIT
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/results/issue9_h200/run33/next/wgmma_a_modes_probe.cu -o $R/probe > $R/probe_build.log 2>&1 || { cat $R/probe_build.log; exit 1; }
timeout 120 $R/probe > $R/probe.jsonl 2>&1; echo "probe rc=$?"; cat $R/probe.jsonl
rm -f $R/probe
