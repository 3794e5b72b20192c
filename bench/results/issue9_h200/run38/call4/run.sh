#!/bin/bash
# Run 38, call 4 (~7 min): the warpgroup attention kernel for head dim 256 over block a with its
# copies free of bank conflicts. Call 3 (Nsight Compute): the cp.async copies put every 16-byte
# chunk of a 128-byte line on the same banks (core matrices 128 bytes apart), 32 shared
# wavefronts an instruction instead of 4, and the kernel stalled on them (long scoreboard 46 %).
# Now core matrices sit 144 bytes apart along a row (the descriptors carry it), a warp copies one
# row's 512 bytes, and K and V have rings of two stages each.
#  1. Its tests (CudaAttention.WarpgroupKernel*) and the rest of the attention tests.
#  2. pi0.5's prefix shapes in the kernel bench: attn_bf16's plan (call 1: 21.99 / 48.33 µs,
#     79 / 160 TFLOP/s; the first form 31.0 / 81.7) beside the warpgroup kernel at 1-4 shares.
#     Predicted: 3 views 20-28 µs (270-380 TFLOP/s); 1 view 10-14 µs.
#  3. pi0.5 E2E with EDGEVLA_ATTN_WG=0 / 1, alternated twice. Predicted: backbone -0.15 to -0.2 ms
#     at 1 view, -0.35 to -0.5 ms at 3 views (18 layers).
#  4. The GPU suite with EDGEVLA_ATTN_WG=1 (the pi0 / pi0.5 engines against the CPU).
exec > $OUT/run.log 2>&1
R=/tmp/r4; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; K=/tmp/b/bin/edgevla_bench_cuda_kernels
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 120 /tmp/b/bin/cuda_attention_test > $R/attention_test.log 2>&1; echo "attention test rc=$?"
grep -E "^\[  (FAILED|PASSED|  OK) |wg|Failure|Expected|actual" $R/attention_test.log | head -60
date
for sh in pi05_prefix_1view pi05_prefix_3view; do
  timeout 60 $K --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2> $R/shape_$sh.err
  echo "$sh rc=$?"; grep -h '"shape"' $R/shape_$sh.out | cut -c40-220
done
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 0 1 0 1; do
  EDGEVLA_ATTN_WG=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_wg$v.out 2> $R/pi0_wg$v.err
  echo "pi0 wg=$v rc=$?"; show $R/pi0_wg$v.out
done
date
(cd /tmp/b && EDGEVLA_ATTN_WG=1 timeout 170 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu_wg.log 2>&1; echo "ctest (wg) rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu_wg.log | head -20)
date
