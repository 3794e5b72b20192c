#!/bin/bash
# Session 2026-11-26c call 1: chained expert layers (chain_gemm + PDL). GPU tests (and the
# untested code moves of the last session); the chain GEMM test 5 more times; pi0.5 head with
# the chain on and off, alternated.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s6call1.sh $R/; tar czf $OUT/results_s6c1.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "Failed|FAILED|\*\*\*" $R/gpu_ctest.log | head -20
grep -h "chained vs blas" $R/gpu_ctest.log | head -10
(cd /tmp/b && for i in 1 2 3 4 5; do ./bin/cuda_chain_gemm_test 2>&1 | tail -1; done) > $R/chain_repeat.log 2>&1; sort $R/chain_repeat.log | uniq -c
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag"; grep -h '^{' $R/pi0_$tag.out | cut -c1-300; }
pi0 chain A=1; pi0 blas EDGEVLA_CUDA_CHAIN_GEMM=0; pi0 chain2 A=1; pi0 blas2 EDGEVLA_CUDA_CHAIN_GEMM=0
grep -h "chain" $R/pi0_chain.err | head -3
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_action_head.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
gzip $R/ncu_*.csv
date
