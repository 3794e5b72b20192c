#!/bin/bash
# Prepared in run 65 (not yet run; ~3 min on the machine call_a left warm, ~6 cold): both CUDA
# launch files recorded 12 s each at the current engines, then their bag reports. The README's
# graph-on-the-GPU figures are older than the engines: pi0.5 from run 44 / 47 (camera → actuation
# 14.1-14.6 ms p50), GR00T from 2026-11-26 (10.9-12.4 ms p50 with a 5.8 ms action head; the
# head's steps now take ~3.85 ms). Predicted: GR00T ~8.5-9.5 ms p50 (preprocess ~1.9, backbone
# ~2.5, head ~4.0 at one view, plus hand-overs); pi0.5 ~13-14 ms.
exec > $OUT/run.log 2>&1
REPO=$PWD; R=$OUT
date
if [ ! -x /tmp/b/bin/edgevla ]; then
  export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -60; exit 1; }
fi
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
rm -rf /tmp/run_pi05 /tmp/run_groot
EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=/tmp/run_pi05 timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/pi05_cuda.launch.txt 2>&1
echo "pi05 launch rc=$?"
$E bag report /tmp/run_pi05/pi05_cuda.mcap > $R/pi05_cuda.report.txt 2>&1
EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=/tmp/run_groot timeout 60 $E launch launch/groot_n16_cuda.yaml --duration 12 > $R/groot_n16_cuda.launch.txt 2>&1
echo "groot launch rc=$?"
$E bag report /tmp/run_groot/groot_n16_cuda.mcap > $R/groot_n16_cuda.report.txt 2>&1
grep -E "camera -> actuation|framework overhead|compute" $R/*.report.txt; date
