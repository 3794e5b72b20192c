#!/bin/bash
# Session 2026-11-26 call 3 (final): GPU tests; edgevla and PyTorch (eager, eager+graph,
# compile+graph, floor) in the same run for pi0.5 and GR00T; both launch files recorded; then
# the per-kernel breakdown of edgevla's stages with the plain run's GEMM picks.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call3.sh $R/; tar czf $OUT/results3.tgz -C $R . ; }
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
export EDGEVLA_GEMM_PLAN_FILE_PI0=/tmp/plans_pi0.txt EDGEVLA_GEMM_PLAN_FILE_GROOT=/tmp/plans_groot.txt
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/edgevla_pi0.jsonl 2> $R/edgevla_pi0.err
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/edgevla_groot.jsonl 2> $R/edgevla_groot.err
cat $R/edgevla_pi0.jsonl $R/edgevla_groot.jsonl | cut -c1-400; date
cd $REPO/bench
python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
# edgevla again after PyTorch (same picks from the plan files): the spread between the two.
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/edgevla_pi0_again.jsonl 2>/dev/null
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/edgevla_groot_again.jsonl 2>/dev/null
date
cd $REPO
mkdir -p /tmp/run_pi05 /tmp/run_groot
EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=/tmp/run_pi05 timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/pi05_cuda.launch.txt 2>&1
$E bag report /tmp/run_pi05/pi05_cuda.mcap > $R/pi05_cuda.report.txt 2>&1
EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=/tmp/run_groot timeout 60 $E launch launch/groot_n16_cuda.yaml --duration 12 > $R/groot_n16_cuda.launch.txt 2>&1
$E bag report /tmp/run_groot/groot_n16_cuda.mcap > $R/groot_n16_cuda.report.txt 2>&1
grep -E "camera -> actuation|framework overhead|compute" $R/*.report.txt; date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for st in backbone action_head; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt $NCU --nvtx-include "edgevla.pi0.$st/" --log-file $R/ncu_edgevla_pi0_$st.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt $NCU --nvtx-include "edgevla.groot.$st/" --log-file $R/ncu_edgevla_groot_$st.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
done
cp /tmp/plans_pi0.txt /tmp/plans_groot.txt $R/ 2>/dev/null
date
