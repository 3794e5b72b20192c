#!/bin/bash
# Session 2026-11-26d call 14: how many k parts the o / down (pi0.5) and out / ff2 (GR00T) GEMMs
# may split into: the default (up to 8, picked by the GEMM's own time) against at most 4 and 2
# (EDGEVLA_GEMM_MAX_K_PARTS), which the norm after them then reads fewer of; alternated twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r14; mkdir -p $R
finish() { cp $REPO/.repro/s7call14.sh $R/; tar czf $OUT/results_s7c14.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1) &
wait; date
for rep in 1 2; do
  for mp in 8 4 2; do
    EDGEVLA_GEMM_MAX_K_PARTS=$mp $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0_p${mp}_$rep.out 2> $R/pi0_p${mp}_$rep.err
    echo "pi0 max parts $mp:"; grep -h '"bench"' $R/pi0_p${mp}_$rep.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))'
    EDGEVLA_GEMM_MAX_K_PARTS=$mp $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 10 > $R/groot_p${mp}_$rep.out 2> $R/groot_p${mp}_$rep.err
    echo "groot max parts $mp:"; grep -h '"bench"' $R/groot_p${mp}_$rep.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))'
  done
done
grep -h "k parts\|parts" $R/pi0_p8_1.out | head -5
date
