#!/bin/bash
# Prepared in run 38 for the next session's first device call (~7 min): the GPU suite at run 38's
# last code, which changed the default attention path without a GPU (attn_bf16's softmax step
# shared with the warpgroup kernel, the walk order behind a flag), then two A/Bs built after the
# device time:
#  - Rotated walks (EDGEVLA_ATTN_ROTATE=1: each row tile's block starts its share at a different
#    key tile, so that the 122 blocks of the 3-view prefix call do not all read the same K/V tile
#    at once): the kernel bench's "rot" / "wgrot" rows and both families' E2E, alternated twice.
#    Predicted: if hot L2 lines pace the walk, the prefix at 3 views -5 to -15 µs (backbone -0.1
#    to -0.25 ms); otherwise within +-1 µs.
#  - The warpgroup kernel with two warpgroups a block (EDGEVLA_ATTN_WG=2: 128 rows sharing each
#    K/V tile): kernel-bench rows wg2 / wg2sN and pi0.5 E2E. Reading of runs 37-38 behind it: the
#    three prefix kernels measured so far move about (K/V bytes in flight a multiprocessor) / 3 µs
#    (attn_bf16 ~64 KB: 21 GB/s; wide blocks ~32 KB: 10; the one-warpgroup kernel ~40 KB: 13), so
#    a block should do as many FLOPs per byte it waits for as it can. Predicted 3 views 35-50 µs
#    (2 shares of 61 blocks).
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
for sh in pi05_prefix_3view pi05_prefix_1view; do
  timeout 40 /tmp/b/bin/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2>&1
  echo "$sh"; grep -h '"shape"' $R/shape_$sh.out | grep -E '"(plan|rot|wg1|wg2|wg2s1|wg2s2|wg2s4|wgrot)"' | cut -c40-190
done
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
