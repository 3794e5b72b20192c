#!/bin/bash
# Run 37 call 4: with the step edges now on the warpgroup GEMM (call 2), five more few-block
# products take k slices in clusters (act1-3, proj_out_2, dec1: 16-24 feature blocks, 4 slices by
# the rule of run 35). Sweep the cap EDGEVLA_CUDA_WGMMA_SPLIT 1-4 on GR00T (it also caps the cross
# q, measured 4 better than 1 in run 35), alternated twice, 1 and 2 views.
# Predicted: 4 (the default) within ±0.03 ms of the best; 1 slower by ~0.1 ms.
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
/tmp/b/bin/edgevla model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?
date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 4 1 2 3 4 1 2 3; do
  EDGEVLA_CUDA_WGMMA_SPLIT=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_s$v.out 2> $R/groot_s$v.err
  echo "groot split $v"; show $R/groot_s$v.out
done
date
