#!/bin/bash
# Run 63, call 5 (~2.5 min, the session's last device seconds): rope_into_cache's kernel test and
# the pi0 GPU tests that run the backbone with it (against the CPU, layered hand-over, the
# tower chained bit for bit).
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
date
cd /tmp/b && timeout 60 ctest -j8 --output-on-failure -R 'RopeIntoCache|CudaPi0\.MatchesTheCpuBackend|CudaPi0Layered|CudaPi0Wgmma\.TheWarpgroupGemmsAgree' > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"
grep -E "tests passed|Passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20
date
