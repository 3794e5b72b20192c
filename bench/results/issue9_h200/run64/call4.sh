#!/bin/bash
# Run 64, call 4: the whole GPU suite at the new default (the towers' stream in bf16; the f32
# stream's ctest entries now set EDGEVLA_CUDA_TOWER_STREAM=0).
exec > $OUT/run.log 2>&1
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 || { grep -B2 -A8 "error" $OUT/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
date
(cd /tmp/b && timeout 240 ctest -L gpu -j8 --output-on-failure > $OUT/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $OUT/ctest_gpu.log | head -20)
date
