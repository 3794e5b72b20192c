#!/bin/bash
# Prepared in run 37 (~7 min; after call_a's suite has run WideBlocksMatch): head dim 256's wide
# attention blocks (8 warps over 128 stacked rows, one key group, so each K/V tile loaded from L2
# serves twice the rows; built after run 37's device time, never run) for pi0.5's prefix.
# First the kernel bench (every split of the 64-row blocks and the wide plan, with TFLOP/s), then
# pi0.5 E2E from builds that take wide blocks where the 64-row plan has at least N blocks,
# alternated twice against the default:
#   b        default (never wide)
#   w100     -DEDGEVLA_ATTN_WIDE_ROWS=100: the prefix at 3 views only (122 blocks of 64 rows)
#   w40      -DEDGEVLA_ATTN_WIDE_ROWS=40: the prefix at 1 view too (58 blocks)
# Predicted: 3 views backbone −0.1 to −0.3 ms (half of ~120 MB of K/V reads from L2 a call);
# 1 view within ±0.1 ms (there the walk is short and fixed costs weigh more).
exec > $OUT/run.log 2>&1
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
for v in "w100 -DEDGEVLA_ATTN_WIDE_ROWS=100" "w40 -DEDGEVLA_ATTN_WIDE_ROWS=40"; do
  set -- $v
  (EDGEVLA_PFX=/tmp/pfx_$1 bash .debs/build.sh . /tmp/$1 -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=$2 > $R/build_$1.log 2>&1; echo "build $1 rc=$?") &
done
for sh in pi05_prefix_1view pi05_prefix_3view; do
  timeout 60 /tmp/b/bin/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2> $R/shape_$sh.err
  echo "$sh"; grep -h '^{' $R/shape_$sh.out | cut -c1-220
done
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for b in b w100 w40 b w100 w40; do
  [ -x /tmp/$b/bin/edgevla_bench_cuda_pi0 ] || continue
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_$b.txt timeout 100 /tmp/$b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$b.out 2> $R/pi0_$b.err
  echo "pi0 $b"; show $R/pi0_$b.out
done
date
