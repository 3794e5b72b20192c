#!/bin/bash
# Run 52, call 5 (~2.5 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 4: norm 6 us, stand-in 3, GEMMs 6-12 us (ff1 12.3, ff2 10.3, q|k|v 8.8, out 6.1); step 1.70 ms
# against the chain's 1.00, and 1.58 ms with no weight copies at all: the weight stream is not what
# makes the operations long. Here each gap is split in two (when the first task saw its dependency
# met; the rest), and the activations' tensor maps come from the kernel's parameters instead of
# global memory (a descriptor fetched from global memory on every copy?).
# Predicted: noticing a completed dependency ~1 us; parameter maps -1 to -3 us on the GEMMs.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r5; mkdir -p $R
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
