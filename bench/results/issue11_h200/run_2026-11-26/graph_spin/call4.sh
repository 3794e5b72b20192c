#!/bin/bash
# Session 2026-11-26 call 4: the GR00T graph with the faster frame pipeline; its preprocess
# stage with and without upstream spinning; the frame pipeline alone on this host beside NumPy.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call4.sh $R/; tar czf $OUT/results4.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
$E model init --family groot --config small --seed 0 --out /tmp/groot_small > /dev/null 2>&1
python3 bench/groot_preprocess.py --bin $BP/edgevla_bench_groot_preprocess --sizes 320x240,640x480 --repeat 50 --json $R/groot_preprocess_h200host.jsonl > /dev/null 2>&1
$BP/edgevla_bench_groot_preprocess --sizes 320x240,640x480 --repeat 50 --checkpoint /tmp/groot_small > $R/groot_preprocess_parts.jsonl 2>&1
cat $R/groot_preprocess_h200host.jsonl $R/groot_preprocess_parts.jsonl | cut -c1-330
wait; date
sed 's/upstream_spin_us: 20000/upstream_spin_us: 0/' launch/groot_n16_cuda.yaml > launch/groot_n16_cuda_nospin.yaml
i=0
for v in groot_n16_cuda groot_n16_cuda_nospin groot_n16_cuda; do
  i=$((i+1)); n=${i}_$v
  mkdir -p /tmp/run_$n
  EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=/tmp/run_$n timeout 60 $E launch launch/$v.yaml --duration 12 > $R/$n.launch.txt 2>&1
  mcap=$(ls /tmp/run_$n/*.mcap | head -1)
  $E bag report $mcap > $R/$n.report.txt 2>&1
  echo "== $n"; grep -E "preprocess|backbone \(|action_head \(|camera -> actuation|framework overhead  " $R/$n.report.txt
done
date
