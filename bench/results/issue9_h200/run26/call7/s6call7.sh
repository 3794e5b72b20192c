#!/bin/bash
# Session 2026-11-26c call 7: chained launches around the chained GEMMs only.
# EDGEVLA_CUDA_CHAIN_GEMM = o,down (default) / o / down / o,down,qkv / all / 0, alternated.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s6call7.sh $R/; tar czf $OUT/results_s6c7.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && ctest -R "Chain|CudaPi0" -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed" $R/gpu_ctest.log | head
grep -h "chained vs blas" $R/gpu_ctest.log | head -8
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag $(grep -h '^{' $R/pi0_$tag.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))')"; }
pi0 od A=1; pi0 off EDGEVLA_CUDA_CHAIN_GEMM=0; pi0 odall EDGEVLA_CUDA_CHAIN_LAUNCH=all; pi0 o EDGEVLA_CUDA_CHAIN_GEMM=o
pi0 d EDGEVLA_CUDA_CHAIN_GEMM=down; pi0 od2 A=1; pi0 off2 EDGEVLA_CUDA_CHAIN_GEMM=0; pi0 odq EDGEVLA_CUDA_CHAIN_GEMM=o,down,qkv; pi0 od3 A=1; pi0 off3 EDGEVLA_CUDA_CHAIN_GEMM=0
grep -h "chained GEMMs" $R/pi0_od.err | head -2
date
