#!/bin/bash
# Run 52, call 7 (~2.5 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 6: a GEMM tile's first activation box arrives 0.7-1.0 us after its dependency is seen; its k
# loop takes ~0.27 us a k step (out 1.4-1.6 us, ff1 6.3-7.7); its epilogue and count 3.7-4.5 us (the
# longest tile's). Here the epilogue + count split three ways: the stores' issue, the consumers'
# barrier, the count (release add, which waits for the block's stores to land); and the count as a
# red.release (no returned value to wait for).
# Predicted: the count ~2-3 us (the stores draining to L2), the rest < 0.5 us; red saves ~0.5 us.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r7; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
EDGEVLA_TARGETS="edgevla_bench_cuda_persistent" bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1; echo "build rc=$?"
grep -q "FAILED\|Error" $R/build.log && { grep -B2 -A12 "FAILED\|Error" $R/build.log | head -40; }
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
timeout 120 $BP/edgevla_bench_cuda_persistent --repeat 20 --rounds 3 > $R/probe.out 2> $R/probe.err; echo "probe rc=$?"
cat $R/probe.out; tail -5 $R/probe.err
date
