#!/bin/bash
# Prepared in run 46 (~5 min; send within 30 s of call_a to find its build and checkpoints): the
# pi0.5 graph (launch/pi05_cuda.yaml, backbone and action head in one process, the cache in a bus
# block) with the block written layer by layer inside the backbone's pass and handed out with the
# layer events (EDGEVLA_CUDA_LAYER_FENCES=2) against the block copied after the pass (1, the
# default; the unbound layered form does not apply to a bound block), alternated twice, 12 s each,
# then their bag reports. call_a's GPU suite holds the form's test
# (CudaPi0Layered.ACacheBoundOnTheDeviceIsWrittenLayerByLayerToo). Run 44 call 5: camera ->
# actuation 14.6 ms p50. Predicted: −0.15 to −0.3 ms p50 with 2 (as the E2E bench gained at one
# view), if the action head node enqueues its run before the backbone's next pass starts.
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
