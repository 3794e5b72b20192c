#!/bin/bash
# Run 52, call 1 (~4 min cold): the persistent-step probe (bench/cuda_persistent.cu).
# One GR00T DiT step (32 blocks, 51 rows) as today's chain of 225 launches (one graph) against one
# persistent kernel whose weight stream runs ahead across operations, on the same weights.
# Predicted: chain ~850-950 us a step (the engine's head step is ~1.1 ms with the real attention
# and adaLN edges); persistent 500-650 us if the hand-overs (~1 us each through counters, run 43)
# and the weight stream (~410 us at the floor) overlap; the w_waits form (weights wait for the
# activations' operation, as the chain's do after its four stages ahead) near the chain's time.
# Also: the device build with the repacked .debs (OpenBLAS without its static library).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
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
