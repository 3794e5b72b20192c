#!/bin/bash
# Run 40 call 5: RoPE inside the expert's attention (AttentionArgs::rope; the pi0 heads in bf16
# by default, EDGEVLA_CUDA_ATTN_ROPE=0 gives the rope kernel back). q's rows are rotated in
# shared memory after they load, block b's key tiles as they arrive, from the (cos, sin) table
# computed once a run; the rope kernel between q|k|v and the attention goes.
#  1. The new attention test, then the GPU suite (the pi0 engines now run it against the CPU).
#  2. pi0.5 E2E with EDGEVLA_CUDA_ATTN_ROPE=1 against 0, alternated twice.
# Predicted: the rope kernel cost 2.2 µs a layer and step on the critical path (run 36's
# ablation, 0.39 ms a head); the rotation inside adds ~0.5 µs to the share that holds block b:
# pi0.5 head −0.2 to −0.3 ms at both view counts.
exec > $OUT/run.log 2>&1
R=/tmp/ne; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 120 /tmp/b/bin/cuda_attention_forms_test --gtest_filter='*Rope*' > $R/rope_test.log 2>&1; echo "rope test rc=$?"; grep -E "differing|FAILED|PASSED|Failure|error" $R/rope_test.log | head -30
(cd /tmp/b && timeout 280 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 1 0 1 0; do
  EDGEVLA_CUDA_ATTN_ROPE=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_r$v.out 2> $R/pi0_r$v.err
  echo "pi0 rope in attention=$v"; show $R/pi0_r$v.out
done
date
