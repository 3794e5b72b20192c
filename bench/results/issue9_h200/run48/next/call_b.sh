#!/bin/bash
# Prepared in run 48 (not yet run on a GPU): the prefix attention's paired form
# (EDGEVLA_ATTN_WG_PAIR=1, AttentionArgs::wg_pair): one stage of K and of V (~101 KB a block, 254
# registers, no spills) so that two blocks share a multiprocessor, the shares filling two blocks on
# each (3 views: 2 shares of 8 tiles, 242 blocks; 1 view: 4 of 2). Why: at three views the
# two-stage kernel runs at 231 TFLOP/s (~28 % of a multiprocessor's warpgroup rate); its
# multiplies, softmax and copies are serialised within one warpgroup a multiprocessor (run 39
# call 2: with the copies gone it is no faster), so a second block beside it can fill the tensor
# cores while the first waits. Predicted: kernel 33.5 → 22-27 µs (3 views), 17.5 → 14-17 (1 view);
# backbone −0.1 to −0.2 ms at 3 views; correctness first (the forms tests run it on every prefix
# shape, NaN tails and replays).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rb; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
if [ ! -x /tmp/b/bin/edgevla_bench_cuda_kernels ]; then
  export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
fi
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/config.json ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 150 ctest -L gpu -R "CudaAttention" -j4 --output-on-failure > $R/ctest_attention.log 2>&1; echo "attention tests rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_attention.log | head -20)
(cd /tmp/b && EDGEVLA_ATTN_WG_PAIR=1 timeout 150 ctest -L gpu -R "CudaPi0" -j4 --output-on-failure > $R/ctest_pi0_pair.log 2>&1; echo "pi0 tests with the pair rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_pi0_pair.log | head -20)
wait; date
for sh in pi05_prefix_3view pi05_prefix_1view; do
  for sp in wgt1 wgtp wgtps2 wgtps4; do
    timeout 30 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --split $sp --repeat 50 2>/dev/null | grep '^{"bench": "attention_shape"' | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l); print(d['shape'], d['splits_asked'], 'splits', d['planned_splits'], d['us_per_call_in_graph'], 'us', d['tflops'], 'TFLOP/s', 'rel-L2', d['rel_l2_vs_planned'])"
  done
done
for r in 1 2; do
  for pr in 1 0; do
    EDGEVLA_ATTN_WG_PAIR=$pr EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 --stages-alone 1 > $R/pi0_pair${pr}_$r.out 2> $R/pi0_pair${pr}_$r.err
    echo "pi0.5 pair $pr round $r"
    grep -h '^{' $R/pi0_pair${pr}_$r.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
  done
done
date
