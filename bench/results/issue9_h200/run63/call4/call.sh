#!/bin/bash
# Run 63, call 4 (~4 min): the GR00T GPU tests at the committed code (calls 2-3's change taken
# out), with the new checks that a non-finite pixel is refused right after good chunks replayed
# from the same graph, fenced and not.
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
cd /tmp/b && timeout 200 ctest -L gpu -R '[Gg]root' -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"
grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20
date
