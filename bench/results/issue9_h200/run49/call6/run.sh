#!/bin/bash
# Run 49 call 6 (the session's last ~5.8 device minutes): three stages of K and V in the
# one-warpgroup bulk-copy kernel (AttentionArgs::wg_stages / EDGEVLA_ATTN_WG_STAGES=3, new, off by
# default; q in K's swizzled layout so that 3 × 64 KB fit: 225 KB). Call 4: copies, waits and
# barriers alone 20.2 of 33.6 µs at three views, the compute adding to them; with two stages each
# tile's copy has one tile of compute to land under. Predicted: 33.6 → 25-29 µs at 3 views,
# 17.3 → 15.5-17 at 1 view if the copies' latency paces it; unchanged if L2's rate does.
# Kernel bench only (tests not built: no device time left for them; its output check compares each
# form with attn_bf16's), every form once, then the default against the deep form alternated.
exec > $OUT/run.log 2>&1
R=/tmp/rf; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
date
for sh in pi05_prefix_3view pi05_prefix_1view; do
  timeout 40 $K --only attention_shapes --shape $sh > $R/k_${sh}_all.out 2>&1
  grep -o '"splits_asked": "[a-z0-9]*", "planned_splits": [0-9]*, "us_per_call_in_graph": [0-9.]*, "tflops": [0-9.]*, "rel_l2_vs_planned": [-0-9.e+]*' $R/k_${sh}_all.out | grep -E '"(plan|wgt1|wgt1s2|wgt1d|wgt1ds2|wgt1ds4)"'
done
for r in 1 2; do
  for f in wgt1 wgt1d; do
    for sh in pi05_prefix_3view pi05_prefix_1view; do
      timeout 30 $K --only attention_shapes --shape $sh --split $f > $R/k_${sh}_${f}_$r.out 2>&1
      echo "$f $sh: $(grep -o '"planned_splits": [0-9]*, "us_per_call_in_graph": [0-9.]*' $R/k_${sh}_${f}_$r.out)"
    done
  done
done
date
