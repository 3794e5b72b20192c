#!/bin/bash
# Run 52, call 11 (~2.5 min cold, the session's last device minutes): the chain's operations timed
# the way the persistent form's were. A stamp kernel after every operation of the chain (each
# operation then hands over twice: the gaps hold one extra ~1 us hand-over), and, where the
# machine has Nsight Systems, the plain chain's kernels in its graph (--cuda-graph-trace=node).
# Predicted (per block, chain ~31 us): LayerNorms ~3 us, q|k|v ~4, stand-in ~2, out ~3, ff1 ~8,
# ff2 ~6, each plus ~1 in the stamped form.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r11; mkdir -p $R
trap 'gzip -f $R/*.csv 2>/dev/null; rm -f $R/*.nsys-rep $R/*.sqlite; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
EDGEVLA_TARGETS="edgevla_bench_cuda_persistent" bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1; echo "build rc=$?"
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
timeout 60 $BP/edgevla_bench_cuda_persistent --repeat 20 --rounds 2 > $R/probe.out 2> $R/probe.err; echo "probe rc=$?"
grep -v '"bench"' $R/probe.out | cut -c1-700
grep '"round": 1' $R/probe.out | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(d['form'], d['us_per_step'], d.get('vs_chain'))"
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
if [ -n "$NSYS" ]; then
  timeout 90 $NSYS profile --cuda-graph-trace=node -t cuda -o $R/chain --force-overwrite true $BP/edgevla_bench_cuda_persistent --chain-only 1 --repeat 5 --rounds 1 > $R/nsys.log 2>&1; echo "nsys rc=$?"
  timeout 60 $NSYS stats --report cuda_gpu_trace --format csv -o $R/trace $R/chain.nsys-rep >> $R/nsys.log 2>&1; echo "stats rc=$?"
  python3 $REPO/bench/results/issue9_h200/run52/call11/chain_trace.py $R/trace_cuda_gpu_trace.csv
fi
date
