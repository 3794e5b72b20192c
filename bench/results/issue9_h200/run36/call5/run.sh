#!/bin/bash
# Run 36 call 5 (the session's last device minutes): the split attention's share count again, now
# that the head is one chain of warpgroup GEMMs (last swept before the chain: 9-12 shares fastest).
# Builds: default (at most 12 shares, at least 2 key tiles a share: 9 shares at 1 view, 12 at 3),
# -DEDGEVLA_ATTN_MAX_SPLITS=6 (6 / 6), and MAX 16 with MIN_TILES 1 (16 / 16). pi0.5 alternated twice.
# Predicted: within ±0.1 ms a head; fewer shares shorten the combine, more shorten each walk.
exec > $OUT/run.log 2>&1
R=/tmp/r5; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(EDGEVLA_PFX=/tmp/pfx6 bash .debs/build.sh . /tmp/b6 -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_MAX_SPLITS=6 > $R/build6.log 2>&1; echo "build6 rc=$?") &
(EDGEVLA_PFX=/tmp/pfx16 bash .debs/build.sh . /tmp/b16 -DEDGEVLA_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_MAX_SPLITS=16 -DEDGEVLA_ATTN_MIN_TILES=1" > $R/build16.log 2>&1; echo "build16 rc=$?") &
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for b in b b6 b16 b b6 b16; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_$b.txt timeout 100 /tmp/$b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$b.out 2> $R/pi0_$b.err
  echo "pi0 $b"; show $R/pi0_$b.out
done
date
