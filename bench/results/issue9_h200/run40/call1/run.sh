#!/bin/bash
# Prepared in run 39 for the next session's first device call (~7-8 min; then call_b.sh, ~4 min): the warpgroup attention
# kernel over blocks a and b (the action experts: cached prefix + the action rows' own keys, in
# the bulk-copy form), built after run 39's device time and never run on a GPU.
#  1. The GPU suite (new: CudaAttention.WarpgroupKernelTakesBlockB; the prefix's bulk-copy form
#     now a template instance of its own, its PTX changed only in the prologue's early copies).
#  2. Kernel bench, the expert's attention (50 rows × 8 heads over 456 / 968 cached keys + 50):
#     attn_bf16 at each split count against "wgt1" / "wgt2" at the plan's shares. Reading behind
#     it: the bulk-copy kernel walks ~1.5x faster a key than attn_bf16 (run 39 call 3), but the
#     expert's shares are short (2-3 tiles), where the Q load, the first tile and the partials
#     weigh as much as the walk. Predicted: wgt1 0.5-2 µs under attn_bf16's plan at 968, ±1 at 456.
#  3. pi0.5 E2E with EDGEVLA_ATTN_WG_EXPERT=1 against 0, alternated twice. Predicted head −0.1 to
#     −0.3 ms if the kernel bench gains ≥ 1 µs; the critical-path cost of the expert attention
#     was 10.6 µs a layer and step (run 36).
#  4. The pi0 engines' GPU tests with EDGEVLA_ATTN_WG_EXPERT=1 (actions against the CPU backend).
#  The suite also runs the MLP-half kernel's tests (CudaWgmmaMlp, and the GR00T engine test's
#  EDGEVLA_CUDA_WGMMA_MLP=1 engine); call_b.sh times it.
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
grep -E "WarpgroupKernel|CudaWgmmaMlp|WarpgroupGemmsAgree" $R/ctest_gpu.log | head -12
timeout 60 /tmp/b/bin/cuda_wgmma_mlp_test > $R/mlp_test.log 2>&1; grep -E "resident clusters|PASSED|FAILED" $R/mlp_test.log | head -6
timeout 60 /tmp/b/bin/edgevla_bench_cuda_kernels --only attention --repeat 20 > $R/expert_attention.out 2>&1
grep -h '"bench": "attention"' $R/expert_attention.out | cut -c1-200
(cd /tmp/b && EDGEVLA_ATTN_WG_EXPERT=1 timeout 90 ctest -R "CudaPi0" -L gpu -j4 > $R/ctest_pi0_expert.log 2>&1; echo "pi0 engines with the expert on the warpgroup kernel: rc=$?"; grep -E "tests passed" $R/ctest_pi0_expert.log)
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 0 1 0 1; do
  EDGEVLA_ATTN_WG_EXPERT=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_x$v.out 2> $R/pi0_x$v.err
  echo "pi0 expert on wg=$v"; show $R/pi0_x$v.out
done
date
