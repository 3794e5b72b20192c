#!/bin/bash
# Prepared in run 38 (~6 min; after call_a): where the warpgroup attention kernel
# (attention_wg.cu) loses its time. Run 38 measured the one-warpgroup form at 79.7 µs against
# attn_bf16's 48.0 at three views (97 against 161 TFLOP/s) and 28.6 against 21.5 at one view,
# unchanged by removing its copies' bank conflicts (call 4) and by cutting the copies' address
# arithmetic (call 5); call 3's profile had the tensor pipe active 12 % of the time.
#  1. An ablation: builds with -DEDGEVLA_ATTN_WG_ABLATE=1 (no K/V copies after the first two
#     tiles), 2 (no softmax), 4 (no p·v), 8 (no q·kᵀ after the first tile), the kernel bench's wg
#     rows from each beside the default. Hypothesis: the copies (cp.async, ~40-64 KB in flight a
#     multiprocessor) set the pace: with 1 the three-view call drops below ~30 µs; if not, the
#     chain of multiplies and softmax does, and 2 / 4 / 8 say which.
#  2. Nsight Compute on both forms at three views with the source page (stalls per SASS line).
exec > $OUT/run.log 2>&1
R=/tmp/ne; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
for n in 1 2 4 8; do
  (EDGEVLA_PFX=/tmp/pfx_a$n bash .debs/build.sh . /tmp/a$n -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_WG_ABLATE=$n > $R/build_a$n.log 2>&1; echo "build a$n rc=$?") &
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for form in wg2; do
  timeout 120 $NCU --set full --import-source yes --kernel-name regex:attn_wg256 --launch-count 1 -o $R/$form -f \
    $K --only attention_shapes --shape pi05_prefix_3view --split $form --repeat 3 > $R/ncu_run_$form.txt 2>&1
  echo "ncu $form rc=$?"
  $NCU -i $R/$form.ncu-rep --page details --print-details all > $R/details_$form.txt 2>&1
  grep -E "Duration|Pipe Tensor Cycles|Issued Warp|No Eligible|Stall Long|Stall Wait|Stall Barrier|Stall GMMA|L2 Cache Throughput|T Tag Requests|Wavefronts Shared Excessive" $R/details_$form.txt | head -30
  $NCU -i $R/$form.ncu-rep --page source --csv --print-source sass > $R/source.csv 2>&1
  python3 - $R/source.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next(i for i, r in enumerate(rows) if "Source" in r)
h = rows[hi]; d = rows[hi + 1:]
num = lambda x: float(x.replace(",", "")) if x.replace(",", "").replace(".", "").isdigit() else 0.0
src, si = h.index("Source"), h.index("Warp Stall Sampling (All Samples)")
tot = sum(num(r[si]) for r in d) or 1
marks = [i for i, r in enumerate(d) if any(k in r[src] for k in ("HGMMA", "BAR.SYNC", "DEPBAR", "LDGDEPBAR"))]
prev = 0
for m in marks + [len(d)]:
    s = sum(num(r[si]) for r in d[prev:m])
    if s / tot > 0.02: print(f"{prev:5d}-{m:5d} {s / tot * 100:5.1f}%  {d[prev][src][:60]}")
    prev = m
for r in sorted(d, key=lambda r: -num(r[si]))[:20]: print(f"{num(r[si]) / tot * 100:5.1f}%  {r[src][:100]}")
PY
  rm -f $R/source.csv $R/$form.ncu-rep
done
wait; date
for b in b a1 a2 a4 a8; do
  [ -x /tmp/$b/bin/edgevla_bench_cuda_kernels ] || continue
  for sh in pi05_prefix_3view pi05_prefix_1view; do
    timeout 40 /tmp/$b/bin/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 20 > $R/shape_${b}_$sh.out 2>&1
    echo "$b $sh"; grep -h '"shape"' $R/shape_${b}_$sh.out | grep -E '"(plan|wg1|wg2|wgrot)"' | cut -c40-190
  done
done
date
