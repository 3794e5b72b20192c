#!/bin/bash
# Run 38, call 5 (~5 min; the session's last device minutes): the warpgroup attention kernel with
# its copies' addresses stepped instead of recomputed and its descriptors added to instead of
# rebuilt. Call 4 (the copies free of bank conflicts) left three views at 81.4 µs: the kernel
# runs ~1700 instructions a warp and tile (call 3: IMAD/LEA/SHF/IADD3 ~680 of them, the copies'
# addresses), one warp a scheduler, 4.3 cycles an instruction.
# Predicted: ~700 instructions a tile; three views 25-35 µs, one view 14-18 µs.
exec > $OUT/run.log 2>&1
R=/tmp/r5; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; K=/tmp/b/bin/edgevla_bench_cuda_kernels
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 90 /tmp/b/bin/cuda_attention_test --gtest_filter='*Warpgroup*:*Real*:*Odd*' > $R/attention_test.log 2>&1; echo "attention test rc=$?"
grep -E "^\[  (FAILED|PASSED) |Failure" $R/attention_test.log | head -20
for sh in pi05_prefix_1view pi05_prefix_3view; do
  timeout 40 $K --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2> $R/shape_$sh.err
  echo "$sh rc=$?"; grep -h '"shape"' $R/shape_$sh.out | grep -E '"(plan|wg plan|wg1|wg2|wg3)"' | cut -c40-200
done
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 0 1 0 1; do
  EDGEVLA_ATTN_WG=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_wg$v.out 2> $R/pi0_wg$v.err
  echo "pi0 wg=$v rc=$?"; show $R/pi0_wg$v.out
done
date
(cd /tmp/b && EDGEVLA_ATTN_WG=1 timeout 80 ctest -L gpu -R "Pi0|pi0" -j4 --output-on-failure > $R/ctest_gpu_wg.log 2>&1; echo "ctest (wg, pi0 engines) rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu_wg.log | head -20)
date
