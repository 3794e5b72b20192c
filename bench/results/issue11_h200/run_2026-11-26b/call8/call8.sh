#!/bin/bash
# Session 2026-11-26b call 4: the attention's cluster merge with its remote reads in flight
# together; GPU tests, both benches, the pi0 head's per-kernel breakdown.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call8.sh $R/; tar czf $OUT/results8.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
git -C $REPO log --oneline -1 > $R/commit.txt 2>/dev/null
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag"; grep -h '^{' $R/pi0_$tag.out | cut -c1-300; }
groot() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
  echo "groot $tag"; grep -h '^{' $R/groot_$tag.out | cut -c1-330; }
pi0 default A=1; groot default A=1; pi0 default2 A=1
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_action_head.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
gzip $R/ncu_*.csv
cp /tmp/plans_*.txt $R/ 2>/dev/null
date
