#!/bin/bash
# Prepared in run 52 for the next session's first call (~3.5 min cold): the persistent-step probe
# with the fixes built after run 52's device time, each against run 52's best form ("base", its GELU
# now the engines' gelu_tanh instead of tanhf: ff1's epilogue ~1 us shorter) in the same run:
#   smem_ops    the operations (225 x 160 B) and the block's tasks copied into shared memory at the
#               start, so no task reads its fields from global memory after a count's fence (call
#               12: 7 % of the stall samples on one such load a rows task);
#   l2_weights  every projection reading one 18.9 MB L2-resident weight (timing only): what the
#               weight reads from device memory cost each form; also run for the chain.
# Then each operation kind alone (--only: 32 of one kind, each after the one before) in both forms,
# with the chain's stamps and the persistent tasks' stamps side by side.
# Predicted: smem_ops -0.1 to -0.2 ms a step (rows tasks ~1 us each, 65 a step on the critical
# path); the chain with L2-resident weights ~0.1 ms faster (run 32: ~0.85 us a
# GEMM, 129 GEMMs a step), the persistent form ~0.12 (its no-weights figure).
exec > $OUT/run.log 2>&1
R=/tmp/rp; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
EDGEVLA_TARGETS="edgevla_bench_cuda_persistent" bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1; echo "build rc=$?"
. /tmp/edgevla-env.sh
timeout 90 /tmp/b/bin/edgevla_bench_cuda_persistent --repeat 20 --rounds 2 > $R/probe.out 2> $R/probe.err; echo "probe rc=$?"
grep -v '"bench"' $R/probe.out | cut -c1-900
grep '"round": 1' $R/probe.out | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(d['form'], d['us_per_step'], d.get('vs_chain'))"
for k in norm qkv out ff1 ff2; do
  timeout 40 /tmp/b/bin/edgevla_bench_cuda_persistent --only $k --repeat 20 --rounds 1 > $R/only_$k.out 2> $R/only_$k.err
  echo "only $k rc=$?"; grep -h "chain_gaps\|gaps_us" $R/only_$k.out | cut -c1-400
  grep '"round": 0' $R/only_$k.out | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(' ', d['form'], d['us_per_step'], d.get('vs_chain'))"
done
rm -f $R/build.log
date
