#!/bin/bash
# Run 47 call 5 (~6 min, fresh machine): the GPU suite after bounding the blocks a backbone writes
# layer by layer (kMaxLayeredBlocks = 8; further blocks take the copy after the pass instead of a
# capture each; new test CudaPi0Layered.BlocksPastTheLayeredOnesTakeTheCopy), then the pi0.5 launch
# graph once at the default. Predicted: 119/119; camera -> actuation p50 14.1-14.5 ms (calls 2, 4).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
grep -h -A3 "BlocksPastTheLayeredOnesTakeTheCopy\|ACacheBoundOnTheDevice" /tmp/b/Testing/Temporary/LastTest.log | grep -E "OK|FAILED|rel-L2" | head -20
wait; date
d=/tmp/run_pi05_default
EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=$d timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/launch_default.txt 2>&1
$E bag report $d/pi05_cuda.mcap > $R/report_default.txt 2>&1
grep -E "camera -> actuation|framework overhead|backbone|action_head" $R/report_default.txt | head -12
date
