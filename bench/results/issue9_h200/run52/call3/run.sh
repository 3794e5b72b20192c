#!/bin/bash
# Run 52, call 3 (~2.5 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 2's stamps: every operation 6-41 us apart (chain: 4.5 us an operation on average); the
# acquire polls with __nanosleep cost ~40 % (relaxed polls: 4.9 -> 2.9 ms); the proxy fences and the
# release add nothing. The rows tasks (norm 15 us, stand-in 22 us) loaded each part's element after
# the one before (one L2 round trip a load): now each part's loads go together, and the stand-in
# takes one row a task. A deeper activations ring (12 stages) for the GEMM tiles' k steps.
# Predicted: norm ~3 us, stand-in ~2 us, GEMMs -1 to -3 us with 12 A stages; step ~1.3-1.8 ms.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
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
