#!/bin/bash
# Session 2026-11-26c call 9: what the chain's device instructions cost when nothing is chained:
# the default build against one with -DEDGEVLA_CHAIN_OFF, GR00T and pi0.5, alternated.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r9; mkdir -p $R
finish() { cp $REPO/.repro/s6call9.sh $R/; tar czf $OUT/results_s6c9.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
bash .debs/build.sh . /tmp/b2 -DCMAKE_CUDA_FLAGS=-DEDGEVLA_CHAIN_OFF > $R/build2.log 2>&1 || { tail -60 $R/build2.log; exit 1; }
. /tmp/edgevla-env.sh
date
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1) &
wait; date
pi0() { local tag=$1 B=$2
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $B/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag $(grep -h '^{' $R/pi0_$tag.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))')"; }
groot() { local tag=$1 B=$2
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $B/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
  echo "groot $tag $(grep -h '^{' $R/groot_$tag.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))')"; }
groot with /tmp/b; groot without /tmp/b2; groot with2 /tmp/b; groot without2 /tmp/b2
pi0 with /tmp/b; pi0 without /tmp/b2; pi0 with2 /tmp/b; pi0 without2 /tmp/b2
date
