#!/bin/bash
# Run 52, call 10 (~2 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 9: rotating each tile's k walk changed nothing (probe k loops the same; the engine's heads
# within the spread or slower; taken out). What paces a tile's k loop (~0.27 us a k step, weights or
# not)? Two forms: no multiplies (the loop only waits for its boxes and releases them), with and
# without weights; and the activation maps over 56 rows so that no box reads past the map's rows
# (the buffers hold 56, the last five zero).
# Predicted: without multiplies the loop keeps most of its time if the activations' copies pace
# it; the 56-row maps change nothing.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r10; mkdir -p $R
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
