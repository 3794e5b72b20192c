#!/bin/bash
# Run 52, call 4 (~2.5 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 3: stand-in 22 -> 9.5 us, but the norm stayed at 17 us and the GEMMs at 6-12 us; 12 stages of
# activations changed nothing; step 2.55 ms against the chain's 1.01. Here the norm's parts all in
# flight at once (up to 8, unrolled), and a form with no weight copies at all (wrong results): the
# hand-overs' chain alone, to tell whether the weight stream lengthens every hand-over.
# Predicted: norm -> 5-8 us; without weights the GEMM gaps drop by half if the stream is to blame.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
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
