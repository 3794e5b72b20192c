#!/bin/bash
# Run 47 call 4 (~2.5 min, right after call 3: its build and checkpoint): launch/pi05_cuda.yaml at
# the new default (layer fences 2) and at 1, alternated twice, 12 s each, with the bag reports.
# Call 2: p50 14.5 / 14.5 (2) against 14.7 / 14.8 ms (1). Predicted the same.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rb; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
if [ ! -x /tmp/b/bin/edgevla ]; then
  export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
fi
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
[ -f /tmp/pi05/config.json ] || $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1
date
for r in 1 2; do
  for lf in 2 1; do
    d=/tmp/run_pi05_lf${lf}_$r
    EDGEVLA_CUDA_LAYER_FENCES=$lf EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=$d timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/launch_lf${lf}_$r.txt 2>&1
    $E bag report $d/pi05_cuda.mcap > $R/report_lf${lf}_$r.txt 2>&1
    echo "layer fences $lf round $r"; grep -E "camera -> actuation|framework overhead" $R/report_lf${lf}_$r.txt
  done
done
date
