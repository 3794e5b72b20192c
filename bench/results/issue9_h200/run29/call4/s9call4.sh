#!/bin/bash
# Session 2026-11-26f call 4: flow_step (the output head, Euler update and next input
# projection as one kernel) against the four kernels it replaces (EDGEVLA_CUDA_FLOW_STEP=0, same
# binary), alternated twice, pi0.5; every GPU test.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { cp $REPO/.repro/s9call4.sh $R/; tar czf $OUT/results_s9c4.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date
export CUDAARCHS=90; rm -rf /tmp/b
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
grep -E "\*\*\*Failed|FAILED" $R/gpu_ctest.log | head
wait; date
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "== pi0 $tag rc=$?"; grep -h '^{' $R/pi0_$tag.out | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'; }
for rep in 1 2; do pi0 off$rep EDGEVLA_CUDA_FLOW_STEP=0; pi0 on$rep A=1; done
date
