#!/bin/bash
# Run 49 call 3: q in the 128-byte swizzled layout K has (EDGEVLA_ATTN_WG_QSW, new, default 1)
# in the prefix attention's bulk-copy warpgroup kernel. Call 2 (Nsight Compute, 3 views): tensor
# pipe 25 % active, the warps' top stall the wgmma waits (19 % of samples); every form (1 or 2
# warpgroups, 1-4 shares, paired blocks) lands at 33-35 µs, so something all share paces it: q·kᵀ
# is m64n64k16 with both operands from shared memory (4 KB a multiply), q in the unswizzled
# 144-byte-chunk layout. Predicted: if that layout's operand reads are the limit, 33.6 → 25-28 µs
# at 3 views, 17.4 → 14-15 at 1 view, backbone −0.1 / −0.2 ms; else within ±0.3 µs.
# Kernel bench alternated twice; attention GPU tests; backbone alone and E2E alternated twice;
# then the whole GPU suite.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
(cd /tmp/b && timeout 120 ctest -R "CudaAttention" --output-on-failure > $R/ctest_attn.log 2>&1; echo "attn ctest rc=$?"; grep -E "tests passed|FAILED|Failed" $R/ctest_attn.log | head)
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
K=$BP/edgevla_bench_cuda_kernels
for r in 1 2; do
  for q in 1 0; do
    for sh in pi05_prefix_3view pi05_prefix_1view; do
      EDGEVLA_ATTN_WG_QSW=$q timeout 60 $K --only attention_shapes --shape $sh --split wgt1 > $R/k_${sh}_q${q}_$r.out 2>&1
      echo "qsw $q $sh: $(grep -o '"us_per_call_in_graph": [0-9.]*, "tflops": [0-9.]*, "rel_l2_vs_planned": [-0-9.e+]*' $R/k_${sh}_q${q}_$r.out)"
    done
  done
done
wait; date
for r in 1 2; do
  for q in 1 0; do
    EDGEVLA_ATTN_WG_QSW=$q EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 --stages-alone 1 > $R/pi0_q${q}_$r.out 2> $R/pi0_q${q}_$r.err
    echo "pi0.5 qsw $q round $r"
    grep -h '^{' $R/pi0_q${q}_$r.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
  done
done
date
(cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
date
