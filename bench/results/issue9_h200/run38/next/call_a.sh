#!/bin/bash
# Prepared in run 38 for the next session's first device call (~8 min): where the warpgroup
# attention kernel (attention_wg.cu, opt-in EDGEVLA_ATTN_WG=1) loses its time. Run 38 measured it
# at 79.7 µs against attn_bf16's 48.0 at three views (97 against 161 TFLOP/s) and 28.6 against
# 21.5 at one view, unchanged by removing its copies' bank conflicts (call 4) and by cutting the
# copies' address arithmetic (call 5); call 3's profile had the tensor pipe active 12 % of the time.
#  1. An ablation: builds with -DEDGEVLA_ATTN_WG_ABLATE=1 (no K/V copies after the first two
#     tiles), 2 (no softmax), 4 (no p·v), 8 (no q·kᵀ after the first tile), the kernel bench's wg
#     rows from each beside the default. Hypothesis: the copies (cp.async, ~64 KB in flight a
#     multiprocessor) set the pace: with 1 the three-view call drops below ~30 µs; if not, the
#     chain of multiplies and softmax does, and 2 / 4 / 8 say which.
#  2. Nsight Compute on the default kernel at three views with the source page (stalls per SASS
#     line), to see where the run-38 form waits.
#  3. Rotated walks (built after run 38's device time, never run: each row tile's block starts its
#     share at a different key tile, so that the 122 blocks of the prefix call do not all read the
#     same K/V tile at once): CudaAttention.RotatedWalksMatch, the kernel bench's "rot" / "wgrot"
#     rows, and pi0.5 and GR00T E2E with EDGEVLA_ATTN_ROTATE=0 / 1 alternated twice.
#     Predicted: if hot L2 lines pace the walk, the prefix at 3 views -5 to -15 µs (backbone -0.1
#     to -0.25 ms); otherwise within +-1 µs.
#  4. The warpgroup kernel with two warpgroups a block (128 rows sharing each K/V tile; built
#     after run 38's device time, never run; EDGEVLA_ATTN_WG=2): its tests, kernel-bench rows
#     wg2 / wg2sN, and pi0.5 E2E. Reading of runs 37-38 behind it: the three prefix kernels measured
#     so far move about (K/V bytes in flight a multiprocessor) / 3 µs (attn_bf16 ~64 KB: 21 GB/s;
#     wide blocks ~32 KB: 10; the one-warpgroup kernel ~40 KB: 13), so a block should do as many
#     FLOPs per byte it waits for as it can. Predicted 3 views 35-50 µs (2 shares of 61 blocks).
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
timeout 120 /tmp/b/bin/cuda_attention_test > $R/attention_test.log 2>&1; echo "attention test rc=$?"
grep -E "^\[  (FAILED|PASSED) |Failure|rotated" $R/attention_test.log | head -30
for n in 1 2 4 8; do
  (EDGEVLA_PFX=/tmp/pfx_a$n bash .debs/build.sh . /tmp/a$n -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_WG_ABLATE=$n > $R/build_a$n.log 2>&1; echo "build a$n rc=$?") &
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
K=/tmp/b/bin/edgevla_bench_cuda_kernels
for form in wg1 wg2; do
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
    echo "$b $sh"; grep -h '"shape"' $R/shape_${b}_$sh.out | grep -E '"(plan|wg1|wg2|wg2s2|rot|wgrot)"' | cut -c40-190
  done
done
date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in b rot wg2 wg2rot b rot wg2 wg2rot; do
  case $v in b) W=0 T=0;; rot) W=0 T=1;; wg2) W=2 T=0;; wg2rot) W=2 T=1;; esac
  EDGEVLA_ATTN_WG=$W EDGEVLA_ATTN_ROTATE=$T EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0 $v"; show $R/pi0_$v.out
done
for v in 0 1 0 1; do
  EDGEVLA_ATTN_ROTATE=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_rot$v.out 2> $R/groot_rot$v.err
  echo "groot rotate=$v"; show $R/groot_rot$v.out
done
date
