#!/bin/bash
# Run 41 call 6 (the session's last device seconds): the GPU suite with four weight stages copied
# before the chain's wait (EDGEVLA_WGMMA_AHEAD=4, call 5's best), before it becomes the default.
exec > $OUT/run.log 2>&1
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 || { grep -B2 -A8 "error" $OUT/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
date
(cd /tmp/b && EDGEVLA_WGMMA_AHEAD=4 timeout 170 ctest -L gpu -j6 --output-on-failure > $OUT/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $OUT/ctest_gpu.log | head -20)
date
