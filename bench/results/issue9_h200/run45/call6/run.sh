#!/bin/bash
# Run 45 call 6 (~3 min, the last device minutes): the engines' tests after the uploader's
# staged-copy helper was shared by both upload forms (a mechanical change after call 5).
exec > $OUT/run.log 2>&1
R=/tmp/rf; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
date
(cd /tmp/b && timeout 150 ctest -R "CudaPi0|Configs/CudaGroot" -L gpu -j8 --output-on-failure > $R/ctest_engines.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_engines.log | head -20)
grep -h "tower MLP" /tmp/b/Testing/Temporary/LastTest.log | head -2
date
