#!/bin/bash
# Run 44 call 5 (~4 min): call 4's launch part again. In call 4 both recorders refused to start
# ("cannot create bag '/tmp/run_pi05/pi05_cuda.mcap': No such file or directory": the run
# directory did not exist); the bag writer now makes a missing folder. Both CUDA launch files
# recorded 12 s, then their bag reports. Predicted: camera → actuation p50 pi0.5 ~12-13 ms,
# GR00T ~9.5-10.5 ms.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r5; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=/tmp/run_pi05 timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/pi05_cuda.launch.txt 2>&1
$E bag report /tmp/run_pi05/pi05_cuda.mcap > $R/pi05_cuda.report.txt 2>&1
EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=/tmp/run_groot timeout 60 $E launch launch/groot_n16_cuda.yaml --duration 12 > $R/groot_n16_cuda.launch.txt 2>&1
$E bag report /tmp/run_groot/groot_n16_cuda.mcap > $R/groot_n16_cuda.report.txt 2>&1
grep -E "camera -> actuation|framework overhead|compute" $R/*.report.txt; date
