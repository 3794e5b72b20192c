#!/bin/bash
# Run 52, call 8 (~2.5 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 7: of the GEMM tiles' 3.4-4.6 us of epilogue + count, issuing the epilogue's 28 stores a
# thread took 3.0-3.8 us, the consumers' barrier 0.3, the release add 0.75-0.78 (a red.release 0.48;
# step unchanged). The epilogue read the operation's output fields through a reference to global
# memory after every store (a store through d may alias them). Here they are taken by value,
# against the by-reference form, alternated; and the 20 + 6 stage ring again.
# Predicted: epilogue issue 3 -> < 0.5 us; the step -0.3 to -0.35 ms (4 GEMMs x 32 blocks).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r8; mkdir -p $R
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
