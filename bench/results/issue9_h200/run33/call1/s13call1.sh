#!/bin/bash
# Run 33 call 1: the split attention's shares merged inside the attention kernel (a barrier
# among each row tile's blocks, cooperative launch) against the combine kernel
# (EDGEVLA_ATTN_MERGE=0) and against the same merge under a plain launch
# (EDGEVLA_ATTN_MERGE=plain): every GPU test, the attention's own timing test both ways, then
# both families E2E alternated twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run33/call1/s13call1.sh $R/; tar czf $OUT/results_s13c1.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|Failed  " $R/gpu_ctest.log | head
for m in 1 0 plain; do
  EDGEVLA_ATTN_MERGE=$m timeout 100 $BP/cuda_attention_test --gtest_filter='*Timing*:*Merge*' > $R/attn_timing_$m.log 2>&1
  echo "attention timing merge=$m"; grep -E "timing bf16|merged|in the kernel:|FAILED" $R/attn_timing_$m.log | head -20
done
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for i in 1 2; do
  for m in 1 0 plain; do
    EDGEVLA_ATTN_MERGE=$m EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_${m}_$i.out 2> $R/pi0_${m}_$i.err; echo "pi0 merge=$m round $i"; show $R/pi0_${m}_$i.out
  done
  for m in 1 0; do
    EDGEVLA_ATTN_MERGE=$m EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_${m}_$i.out 2> $R/groot_${m}_$i.err; echo "groot merge=$m round $i"; show $R/groot_${m}_$i.out
  done
done
date
