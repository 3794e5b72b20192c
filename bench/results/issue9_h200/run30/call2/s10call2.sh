#!/bin/bash
# Session 2026-11-26g (run 30) call 2: at c7d4452 (devices started ahead in processes that take
# a device topic): every GPU test; the CUDA multiprocess launch under load, whether the
# recorder process starts cuda:0 ahead; the bus ring tests repeated under load; the CPU suite
# on 16 cores.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
finish() { cp $REPO/.repro/s10call2.sh $R/; gzip -f $R/cpu16_ctest.log 2>/dev/null; tar czf $OUT/results_s10c2.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log)
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/gpu_ctest.log | head
date
$E model init --config tiny --model pi05 --seed 3 --out /tmp/tiny_pi05 > /dev/null 2>&1
for i in $(seq 16); do (timeout 100 sh -c 'while :; do :; done') & done
for k in 1 2; do
  D=/tmp/mp$k; mkdir -p $D
  EDGEVLA_DOMAIN=mp$k EDGEVLA_CHECKPOINT=/tmp/tiny_pi05 EDGEVLA_RUN_DIR=$D timeout 60 $E launch launch/pi05_cuda_multiprocess.yaml --duration 4 --set actuation.execute_steps=5 > $D/launch.log 2>&1
  echo "launch $k rc=$?"
  EDGEVLA_DOMAIN=mp$k $E bag report $D/pi05_cuda_multiprocess.mcap --json $D/report.json > /dev/null 2>&1
  python3 -c "import json,sys; j=json.load(open('$D/report.json')); print(' messages', j['messages'], 'chunks', j.get('actuation',{}).get('chunks_received'))"
  grep -E "ahead|slow|took|stopping:|wrote|not all|group '.*' started" $D/launch.log | cut -c1-200
  cp $D/launch.log $R/mp_launch_$k.log; cp $D/report.json $R/mp_report_$k.json
done
(cd /tmp/b && timeout 120 ./bin/bus_ring_test --gtest_repeat=20 > $R/bus_ring_repeat.log 2>&1; echo "bus_ring_test x20 under load rc=$?"; grep -c "^\[  PASSED" $R/bus_ring_repeat.log)
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
date
(cd /tmp/b && timeout 330 ctest -LE gpu -j16 -E '^(python_client|mcap_js_.*|Install.*)$' --output-on-failure > $R/cpu16_ctest.log 2>&1; echo "cpu16 ctest rc=$?"; tail -4 $R/cpu16_ctest.log)
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/cpu16_ctest.log | head
date
