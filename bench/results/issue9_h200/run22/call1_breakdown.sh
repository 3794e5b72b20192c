#!/bin/bash
# Session 2026-11-26 call 1: per-kernel breakdown of edgevla's and torch.compile's stages (ncu).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call1.sh $R/; tar czf $OUT/results1.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; time bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
BP=$(dirname $(find /tmp/b -name edgevla_bench_cuda_pi0 -type f | head -1))
echo "bench dir $BP"
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
wait; date
# Plain timings first (stage replay times for the breakdown).
$BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 30 --warmup 5 > $R/e_pi0.jsonl 2> $R/e_pi0.err
$BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 30 --warmup 5 > $R/e_groot.jsonl 2> $R/e_groot.err
cat $R/e_pi0.jsonl $R/e_groot.jsonl; date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for st in backbone action_head; do
  $NCU --nvtx-include "edgevla.pi0.$st/" --log-file $R/ncu_e_pi0_$st.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2> $R/ncu_e_pi0_$st.err
  echo "pi0 $st rc=$? rows=$(grep -c gpu__time $R/ncu_e_pi0_$st.csv)"; date
  $NCU --nvtx-include "edgevla.groot.$st/" --log-file $R/ncu_e_groot_$st.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2> $R/ncu_e_groot_$st.err
  echo "groot $st rc=$? rows=$(grep -c gpu__time $R/ncu_e_groot_$st.csv)"; date
done
cd $REPO/bench
python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1 --variants compile --repeat 20 --warmup 5 --json $R/t_pi0.jsonl > /dev/null 2> $R/t_pi0.err
python3 torch_groot.py --checkpoint /tmp/groot --views 1 --variants compile --repeat 20 --warmup 5 --json $R/t_groot.jsonl > /dev/null 2> $R/t_groot.err
date
for st in backbone head; do
  $NCU --nvtx-include "torch.compile.$st/" --log-file $R/ncu_t_pi0_$st.csv python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1 --variants compile --repeat 2 --warmup 1 --profile-ranges > /dev/null 2> $R/ncu_t_pi0_$st.err
  echo "torch pi0 $st rc=$? rows=$(grep -c gpu__time $R/ncu_t_pi0_$st.csv)"; date
  $NCU --nvtx-include "torch.compile.$st/" --log-file $R/ncu_t_groot_$st.csv python3 torch_groot.py --checkpoint /tmp/groot --views 1 --variants compile --repeat 2 --warmup 1 --profile-ranges > /dev/null 2> $R/ncu_t_groot_$st.err
  echo "torch groot $st rc=$? rows=$(grep -c gpu__time $R/ncu_t_groot_$st.csv)"; date
done
python3 kernel_breakdown.py e_pi0_bb=$R/ncu_e_pi0_backbone.csv t_pi0_bb=$R/ncu_t_pi0_backbone.csv e_pi0_head=$R/ncu_e_pi0_action_head.csv t_pi0_head=$R/ncu_t_pi0_head.csv \
  e_groot_bb=$R/ncu_e_groot_backbone.csv t_groot_bb=$R/ncu_t_groot_backbone.csv e_groot_head=$R/ncu_e_groot_action_head.csv t_groot_head=$R/ncu_t_groot_head.csv \
  --top 15 --json $R/breakdown.json > $R/breakdown.txt 2>&1
cat $R/breakdown.txt
