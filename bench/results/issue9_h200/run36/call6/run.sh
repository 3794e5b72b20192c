#!/bin/bash
# Run 36 call 6 (the last ~4 device minutes): EDGEVLA_CUDA_CARVEOUT=max against the default,
# pi0.5 only, alternated twice (the full A/B with GR00T is in run36/next/call_a.sh). Every chained
# kernel asks for the largest shared-memory carveout, so a GEMM's blocks may be scheduled beside
# the short kernel ahead of them. Predicted: 0 if the driver keeps one split already; else −0.3
# to −0.5 ms a head.
exec > $OUT/run.log 2>&1
R=/tmp/r6; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
date
/tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for c in max default max default; do
  EDGEVLA_CUDA_CARVEOUT=$c EDGEVLA_GEMM_PLAN_FILE=/tmp/plans.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_$c.out 2> $R/pi0_$c.err
  echo "pi0 carveout $c"; show $R/pi0_$c.out; date
done
