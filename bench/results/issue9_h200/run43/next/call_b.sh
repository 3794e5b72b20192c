#!/bin/bash
# Prepared in run 43 (~4 min, after call_a.sh): with narrow attention blocks the action experts'
# call has 13 row tiles (1 view) instead of 7, so the share rule's trade-off moved (three 32-key
# tiles a share at least, run 36; EDGEVLA_ATTN_MIN_TILES, read at run time). pi0.5's and GR00T's
# heads with EDGEVLA_ATTN_NARROW=2 at 2 / 3 / 4 tiles a share, alternated twice. Predicted: 2
# tiles (8 shares at 1 view, 104 blocks) within ±0.05 ms of 3; 4 slower at 1 view.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rm; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for t in 3 2 4; do
    EDGEVLA_ATTN_NARROW=2 EDGEVLA_ATTN_MIN_TILES=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_t${t}_$round.out 2> $R/pi0_t${t}_$round.err
    echo "pi0.5 narrow=2 min tiles=$t"; show $R/pi0_t${t}_$round.out
    EDGEVLA_ATTN_NARROW=2 EDGEVLA_ATTN_MIN_TILES=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_t${t}_$round.out 2> $R/groot_t${t}_$round.err
    echo "groot narrow=2 min tiles=$t"; show $R/groot_t${t}_$round.out
  done
done
date
