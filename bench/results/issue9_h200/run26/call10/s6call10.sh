#!/bin/bash
# Session 2026-11-26c call 10: the shared-memory carveout hint on the short kernels, on
# (default) against off (EDGEVLA_CUDA_CARVEOUT=0), GR00T and pi0.5, alternated twice; kernel tests.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r10; mkdir -p $R
finish() { cp $REPO/.repro/s6call10.sh $R/; tar czf $OUT/results_s6c10.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1) &
(cd /tmp/b && ctest -R "CudaKernels|CudaAttention|Chain" -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log) &
wait; date
fmt() { python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))'; }
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag $(grep -h '^{' $R/pi0_$tag.out | fmt)"; }
groot() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
  echo "groot $tag $(grep -h '^{' $R/groot_$tag.out | fmt)"; }
groot on A=1; groot off EDGEVLA_CUDA_CARVEOUT=0; groot on2 A=1; groot off2 EDGEVLA_CUDA_CARVEOUT=0
pi0 on A=1; pi0 off EDGEVLA_CUDA_CARVEOUT=0; pi0 on2 A=1; pi0 off2 EDGEVLA_CUDA_CARVEOUT=0
date
