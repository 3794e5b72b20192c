#!/bin/bash
# Session 2026-11-26b call 1: GPU tests of the k-split parts and RoPE-in-attention change; both
# benches with the split allowed (default) and capped at 1 (EDGEVLA_GEMM_MAX_K_PARTS=1),
# alternated; per-kernel breakdown of both heads; the 16-core CPU suite beside it.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call5.sh $R/; tar czf $OUT/results5.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
git -C $REPO log --oneline -1 > $R/commit.txt 2>/dev/null
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
cp /tmp/b/Testing/Temporary/LastTest.log $R/gpu_LastTest.log 2>/dev/null
bench() {  # tag, max parts
  EDGEVLA_LOG_LEVEL=debug EDGEVLA_GEMM_MAX_K_PARTS=$2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0_$2.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$1.out 2> $R/pi0_$1.err
  EDGEVLA_LOG_LEVEL=debug EDGEVLA_GEMM_MAX_K_PARTS=$2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot_$2.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$1.out 2> $R/groot_$1.err
  grep -h '^{' $R/pi0_$1.out $R/groot_$1.out | cut -c1-300; date
}
bench split_a 8
bench whole_a 1
bench split_b 8
bench whole_b 1
(cd /tmp/b && timeout 200 ctest -j16 -LE gpu -E '^(python_client|mcap_js_.*|Install.*)$' > $R/cpu_ctest16.log 2>&1; echo "cpu ctest16 rc=$?"; tail -5 $R/cpu_ctest16.log) &
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0_8.txt timeout 120 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_action_head.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot_8.txt timeout 100 $NCU --nvtx-include "edgevla.groot.action_head/" --log-file $R/ncu_groot_action_head.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
gzip $R/ncu_*.csv
wait
cp /tmp/plans_*.txt $R/ 2>/dev/null
date
