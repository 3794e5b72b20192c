#!/bin/bash
# Run 52, call 6 (~2.5 min): the persistent-step probe (bench/cuda_persistent.cu).
# Call 5: a completed dependency is seen 0.2-0.35 us after it completes (the chain's hand-over:
# ~1 us, run 43); parameter tensor maps change nothing. The GEMMs' time is their tiles' own work.
# Here each GEMM tile is stamped: its first activation box's arrival (latest and earliest over the
# operation's tiles, from when the dependency was seen), its k loop, its epilogue + count (longest).
# Predicted: first arrival ~1 us; the k loop ~0.3 us a k step (ff1's 24 steps ~7 us); epilogue ~1 us.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r6; mkdir -p $R
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
