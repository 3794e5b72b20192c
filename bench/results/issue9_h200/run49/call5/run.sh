#!/bin/bash
# Run 49 call 5: the prefix attention's row tiles in pairs sharing each K/V copy
# (EDGEVLA_ATTN_WG_PAIRS, new, default 1): a cluster of two adjacent row tiles, each block
# copying two of a tile's four 64-dim boxes multicast to both, an empty barrier a stage that both
# blocks' releases complete before either refills it. Call 4's ablation: copies, waits and
# barriers alone 20.2 µs of 33.6 at three views (14.3 of 17.3 at one): every block reads all of
# K and V (1 MB at three views, 121 blocks, ~10.6 TB/s from L2). Predicted: the copy floor halves;
# 3 views 33.6 → 27-30 µs, 1 view 17.3 → 15.5-16.5; backbone −0.06 to −0.12 ms at 3 views.
# Kernel bench alternated twice; the GPU suite; backbone alone and E2E alternated twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/re; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
K=$BP/edgevla_bench_cuda_kernels
for r in 1 2; do
  for q in 1 0; do
    for sh in pi05_prefix_3view pi05_prefix_1view; do
      EDGEVLA_ATTN_WG_PAIRS=$q timeout 60 $K --only attention_shapes --shape $sh --split wgt1 > $R/k_${sh}_p${q}_$r.out 2>&1
      echo "pairs $q $sh: rc=$? $(grep -o '"planned_splits": [0-9]*, "us_per_call_in_graph": [0-9.]*, "tflops": [0-9.]*, "rel_l2_vs_planned": [-0-9.e+]*' $R/k_${sh}_p${q}_$r.out)"
    done
  done
done
EDGEVLA_ATTN_WG_PAIRS=1 timeout 60 $K --only attention_shapes --shape pi05_prefix_1view > $R/k_1view_all.out 2>&1
grep -o '"splits_asked": "[a-z0-9]*", "planned_splits": [0-9]*, "us_per_call_in_graph": [0-9.]*' $R/k_1view_all.out | grep wgt
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 200 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
for r in 1 2; do
  for q in 1 0; do
    EDGEVLA_ATTN_WG_PAIRS=$q EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 --stages-alone 1 > $R/pi0_p${q}_$r.out 2> $R/pi0_p${q}_$r.err
    echo "pi0.5 pairs $q round $r"
    grep -h '^{' $R/pi0_p${q}_$r.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
  done
done
date
