#!/bin/bash
# Session 2026-11-26 call 2: GPU tests, then edgevla's stages again (timing + per-kernel).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call2.sh $R/; tar czf $OUT/results2.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -5 $R/gpu_ctest.log) &
wait; date
cp /tmp/b/Testing/Temporary/LastTest.log $R/gpu_LastTest.log 2>/dev/null
$BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/e_pi0.jsonl 2> $R/e_pi0.err
$BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 --log-level debug > $R/e_groot.jsonl 2> $R/e_groot.err
cat $R/e_pi0.jsonl $R/e_groot.jsonl; date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for st in backbone action_head; do
  $NCU --nvtx-include "edgevla.pi0.$st/" --log-file $R/ncu_e_pi0_$st.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2> $R/ncu_e_pi0_$st.err
  $NCU --nvtx-include "edgevla.groot.$st/" --log-file $R/ncu_e_groot_$st.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2> $R/ncu_e_groot_$st.err
done
date
cd $REPO/bench
python3 kernel_breakdown.py e_pi0_bb=$R/ncu_e_pi0_backbone.csv e_pi0_head=$R/ncu_e_pi0_action_head.csv \
  e_groot_bb=$R/ncu_e_groot_backbone.csv e_groot_head=$R/ncu_e_groot_action_head.csv --top 14 --json $R/breakdown.json > $R/breakdown.txt 2>&1
cat $R/breakdown.txt | head -80
