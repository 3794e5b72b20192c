#!/bin/bash
# Run 39, call 3: the warpgroup attention kernel with K and V by bulk tensor copies (TMA, 128-byte
# swizzle, one thread issuing four 8 KB boxes a tile, mbarrier-counted; EDGEVLA_ATTN_WG_TMA=1).
# Call 2's ablation had the cp.async copies pacing the kernel (3 views: 35.6 µs without them
# against 80.6 for one warpgroup, 39.2 against 54.1 for two). Predicted: wgt2 at 3 views 40-46 µs
# (attn_bf16 48.6), wgt1 45-60; at one view no gain (24-29 against 22); backbone at 3 views
# -0.05 to -0.15 ms if wgt2 lands near 40.
# The GPU suite first (new: the bulk-copy form in WarpgroupKernelMatches, FollowsALen, RotatedWalks).
exec > $OUT/run.log 2>&1
R=/tmp/nc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 200 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
grep -E "WarpgroupKernel|RotatedWalks" $R/ctest_gpu.log | head -8
for sh in pi05_prefix_3view pi05_prefix_1view; do
  timeout 60 /tmp/b/bin/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2>&1
  echo "$sh"; grep -h '"shape"' $R/shape_$sh.out | grep -E '"(plan|wg1|wg2|wgrot|wgt1|wgt2|wgt2s2|wgt2s4|wgtrot)"' | cut -c40-190
done
(cd /tmp/b && EDGEVLA_ATTN_WG=2 EDGEVLA_ATTN_WG_TMA=1 timeout 90 ctest -R "CudaPi0" -L gpu -j4 > $R/ctest_pi0_wgt.log 2>&1; echo "pi0 engines with wgt2: rc=$?"; grep -E "tests passed" $R/ctest_pi0_wgt.log)
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in b wgt2 wgt2rot b wgt2 wgt2rot; do
  case $v in b) W=0 M=0 T=0;; wgt2) W=2 M=1 T=0;; wgt2rot) W=2 M=1 T=1;; esac
  EDGEVLA_ATTN_WG=$W EDGEVLA_ATTN_WG_TMA=$M EDGEVLA_ATTN_ROTATE=$T EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0 $v"; show $R/pi0_$v.out
done
date
