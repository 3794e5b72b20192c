#!/bin/bash
# Run 58, call 4 (~5 min, the session's last device minutes): the GPU suite at the session's last
# code (the attention plan's environment defaults moved to attention_defaults.cpp, no change meant).
# Predicted: 136/136.
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
date
cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20
date
# The script above did not source /tmp/edgevla-env.sh before ctest, so every test failed to load
# its shared libraries (run.log, ctest_gpu.log's first form). A second call on the same warm
# machine ran, on the same build:
#   . /tmp/edgevla-env.sh; cd /tmp/b && timeout 200 ctest -L gpu -j6 --output-on-failure
# ctest_gpu.log is that run's: 136/136.
