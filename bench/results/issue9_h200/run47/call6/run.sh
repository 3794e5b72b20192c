#!/bin/bash
# Run 47 call 6 (the session's last ~5 device minutes, fresh machine): the layered head's timings
# keep the backbone's part apart (InputWait::time_producer: the head's time up to the backbone's end
# counted as its wait for the backbone, which the nodes report as the backbone's). Call 5's bag
# report at the layered default showed backbone (compute) 0.38 ms (its enqueue) and action_head
# 11.8 ms (the backbone's device time in it). The CudaPi0Layered tests, then the pi0.5 graph on a
# small checkpoint with its bag report. Predicted: tests pass; the report's backbone compute back
# near the device pass, the head's near its own steps.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config small --dtype bf16 --seed 0 --out /tmp/pi05s > /dev/null 2>&1; echo small init rc=$?) &
(cd /tmp/b && timeout 120 ./bin/cuda_pi0_test --gtest_filter='CudaPi0Layered.*' > $R/layered_tests.log 2>&1; echo "layered tests rc=$?")
grep -E "^\[  |layered replay|FAILED|Failure" $R/layered_tests.log | tail -20
wait; date
d=/tmp/run_pi05s
EDGEVLA_CHECKPOINT=/tmp/pi05s EDGEVLA_RUN_DIR=$d timeout 40 $E launch launch/pi05_cuda.yaml --duration 8 > $R/launch_small.txt 2>&1 || tail -5 $R/launch_small.txt
$E bag report $d/pi05_cuda.mcap > $R/report_small.txt 2>&1
grep -E "compute|camera -> actuation|framework overhead" $R/report_small.txt | head -8
date
