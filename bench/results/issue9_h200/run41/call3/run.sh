#!/bin/bash
# Run 41 call 3: where call 2's +3.3 ms went. The norm epilogue as built (its counters' reset now
# off the critical path) against a probe build whose feature blocks do not meet (no fence, atomic
# or poll; wrong rows, timing only), both against the default, alternated twice.
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
bash .debs/build.sh . /tmp/b2 -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DEDGEVLA_WGMMA_NORM_NO_SYNC > $R/build2.log 2>&1 || { grep -B2 -A8 "error" $R/build2.log | head -60; exit 1; }
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for round in 1 2; do
  for v in "b 0" "b 1" "b2 1"; do
    set -- $v
    EDGEVLA_CUDA_GEMM_NORM=$2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/$1/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$1_n$2_$round.out 2> $R/pi0_$1_n$2_$round.err
    echo "pi0.5 build $1 gemm norm=$2 rc=$?"; show $R/pi0_$1_n$2_$round.out
  done
done
date
