#!/bin/bash
# Run 52, call 2 (~2 min warm): the persistent-step probe (bench/cuda_persistent.cu).
# Call 1 found the persistent kernel correct (3.9e-3 from the chain) but 4.9 ms a step against the
# chain's 1.01. Here: each operation's completion stamped (%globaltimer), the gaps averaged per kind
# of operation; and the hand-over's parts switched off one by one (the async-proxy fences, the
# fence + add as one release add, relaxed polling), plus an 8-stage weight ring.
# Predicted: the proxy fences (which may wait for the block's weight copies in flight) or the
# polling are the cost; the rows tasks (LayerNorm one row a block) a few us each.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
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
