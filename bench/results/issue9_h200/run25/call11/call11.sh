#!/bin/bash
# Session 2026-11-26b call 7 (final): norms load their parameters early. GPU tests (the
# plan-file and k-split tests 10 times more); edgevla and PyTorch in the same run for pi0.5 and
# GR00T; both heads' kernel breakdown; both launch files recorded.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call11.sh $R/; tar czf $OUT/results11.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
(cd /tmp/b && for i in 1 2 3 4 5 6 7 8 9 10; do ./bin/cuda_gemm_test --gtest_filter='*PlanFile*:*KSplit*' 2>&1 | tail -1; done) > $R/planfile_repeat.log 2>&1; sort $R/planfile_repeat.log | uniq -c
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag"; grep -h '^{' $R/pi0_$tag.out | cut -c1-300; }
groot() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
  echo "groot $tag"; grep -h '^{' $R/groot_$tag.out | cut -c1-330; }
pi0 default A=1; groot default A=1
pi0 whole EDGEVLA_GEMM_MAX_K_PARTS=1; groot whole EDGEVLA_GEMM_MAX_K_PARTS=1
pi0 default2 A=1; groot default2 A=1
cd $REPO/bench
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
cd $REPO
pi0 again A=1; groot again A=1
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_action_head.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 80 $NCU --nvtx-include "edgevla.groot.action_head/" --log-file $R/ncu_groot_action_head.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
gzip $R/ncu_*.csv
mkdir -p /tmp/run_pi05 /tmp/run_groot
EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=/tmp/run_pi05 timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/pi05_cuda.launch.txt 2>&1
$E bag report /tmp/run_pi05/pi05_cuda.mcap > $R/pi05_cuda.report.txt 2>&1
EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=/tmp/run_groot timeout 60 $E launch launch/groot_n16_cuda.yaml --duration 12 > $R/groot_n16_cuda.launch.txt 2>&1
$E bag report /tmp/run_groot/groot_n16_cuda.mcap > $R/groot_n16_cuda.report.txt 2>&1
grep -E "camera -> actuation|framework overhead" $R/*.report.txt
cp /tmp/plans_*.txt $R/ 2>/dev/null
date
