#!/bin/bash
# Run 49 call 4: what paces the prefix attention's default form (bulk-copy warpgroup kernel, one
# warpgroup) now, by ablation: attention_wg.cu rebuilt with EDGEVLA_ATTN_WG_ABLATE = 2 (no
# softmax), 4 (no p·v), 8 (no q·kᵀ after the first tile), 6 (neither softmax nor p·v), 14 (no
# multiplies or softmax after the first tile: copies, waits and barriers only); outputs wrong,
# timings only. Run 39's ablation was of the cp.async form (copies pacing it); call 3 found q's
# layout is not the limit. Predicted: the copies-and-barriers floor (14) 12-18 µs at 3 views; if
# 4 or 8 alone take ≥ 8 µs off, the multiplies' chain paces it (a second warpgroup offset by half
# a tile would be next); if only 6 / 14 do, the serial order softmax → rescale → barrier does.
exec > $OUT/run.log 2>&1
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
F=runtime/backends/cuda/kernels/attention_wg.cu
cp $F /tmp/attention_wg.orig
run() {
  for sh in pi05_prefix_3view pi05_prefix_1view; do
    timeout 60 $K --only attention_shapes --shape $sh --split wgt1 > $R/k_${sh}_a$1_$2.out 2>&1
    echo "ablate $1 ($2) $sh: $(grep -o '"us_per_call_in_graph": [0-9.]*, "tflops": [0-9.]*' $R/k_${sh}_a$1_$2.out)"
  done
}
run 0 first
for n in 2 4 8 6 14; do
  sed "s/^#define EDGEVLA_ATTN_WG_ABLATE 0$/#define EDGEVLA_ATTN_WG_ABLATE $n/" /tmp/attention_wg.orig > $F
  grep -c "define EDGEVLA_ATTN_WG_ABLATE $n" $F > /dev/null || echo "sed failed for $n"
  cmake --build /tmp/b --target edgevla_bench_cuda_kernels > $R/build_a$n.log 2>&1 || { echo "build a$n failed"; tail -20 $R/build_a$n.log; }
  run $n 1
done
cp /tmp/attention_wg.orig $F
cmake --build /tmp/b --target edgevla_bench_cuda_kernels > $R/build_a0.log 2>&1
run 0 last
date
