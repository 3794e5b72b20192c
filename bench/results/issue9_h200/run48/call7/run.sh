#!/bin/bash
# Run 48 call 7 (the session's last ~5 device minutes): a first look at the prefix attention's
# paired form (EDGEVLA_ATTN_WG_PAIR, see next/call_b.sh for why and the prediction): the kernel
# bench at 3 and 1 views, its output against the plan's (rel-L2), then E2E pair 1 / 0 once if the
# time allows. No GPU tests in this call (build without them).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rg; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
date
for sh in pi05_prefix_3view pi05_prefix_1view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 50 > $R/kern_$sh.out 2>&1; echo "$sh rc=$?"
  grep '^{"bench": "attention_shape"' $R/kern_$sh.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if d['splits_asked'] in ('plan', 'wgt1', 'wgt1s2', 'wgtp', 'wgtps2', 'wgtps4', 'wg1'):
        print(d['shape'], d['splits_asked'], 'splits', d['planned_splits'], d['us_per_call_in_graph'], 'us', d['tflops'], 'TFLOP/s', 'rel-L2', d['rel_l2_vs_planned'])"
done
wait; date
for pr in 1 0; do
  EDGEVLA_ATTN_WG_PAIR=$pr EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 --stages-alone 1 > $R/pi0_pair$pr.out 2> $R/pi0_pair$pr.err
  echo "pi0.5 pair $pr rc=$?"
  grep -h '^{' $R/pi0_pair$pr.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
done
date
