#!/bin/bash
# Session 2026-11-26g (run 30) call 1: GPU tests at the tip (two test-only commits since run 29
# call 7, and the bus drain); the CPU suite on 16 cores; the CUDA multiprocess launch under a
# full CPU load, its log and bag report each time.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { cp $REPO/.repro/s10call1.sh $R/; gzip -f $R/cpu16_ctest.log 2>/dev/null; tar czf $OUT/results_s10c1.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log)
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/gpu_ctest.log | head
date
(cd /tmp/b && timeout 330 ctest -LE gpu -j16 -E '^(python_client|mcap_js_.*|Install.*)$' --output-on-failure > $R/cpu16_ctest.log 2>&1; echo "cpu16 ctest rc=$?"; tail -4 $R/cpu16_ctest.log)
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/cpu16_ctest.log | head
date
# The multiprocess CUDA graph under load: 16 busy loops beside it.
$E model init --config tiny --model pi05 --seed 3 --out /tmp/tiny_pi05 > /dev/null 2>&1
for i in $(seq 16); do (timeout 120 sh -c 'while :; do :; done') & done
for k in 1 2 3 4; do
  D=/tmp/mp$k; mkdir -p $D
  EDGEVLA_DOMAIN=mp$k EDGEVLA_CHECKPOINT=/tmp/tiny_pi05 EDGEVLA_RUN_DIR=$D timeout 60 $E launch launch/pi05_cuda_multiprocess.yaml --duration 4 --set actuation.execute_steps=5 > $D/launch.log 2>&1
  echo "launch $k rc=$?"
  EDGEVLA_DOMAIN=mp$k $E bag report $D/pi05_cuda_multiprocess.mcap --json $D/report.json > /dev/null 2>&1
  python3 -c "import json,sys; j=json.load(open('$D/report.json')); print(' messages', j['messages'], 'chunks', j.get('actuation',{}).get('chunks_received'))"
  grep -E "slow|took|stopping|wrote|not all" $D/launch.log | cut -c1-260
  cp $D/launch.log $R/mp_launch_$k.log; cp $D/report.json $R/mp_report_$k.json
done
kill $(jobs -p) 2>/dev/null
date
