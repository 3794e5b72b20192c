#!/bin/bash
# Run 54, call 6 (~4 min, the last device seconds): call 5's test filter matched no test (ctest
# names are the gtest names); the warpgroup kernel's head-dim-128 test, and both families' engines
# against the CPU with EDGEVLA_ATTN_WG128=2.
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
date
cd /tmp/b
EDGEVLA_ATTN_WG128=2 timeout 110 ctest -R "NarrowHeadDims|MatchesTheCpuBackend|KeyGroupsAndShares" -j6 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"
grep -E "tests passed|Test +#|FAILED|Failed|Expected|Which is" $R/ctest.log | head -30
grep -h "wg128" /tmp/b/Testing/Temporary/LastTest.log | head -40 > $R/wg128_cases.txt; wc -l < $R/wg128_cases.txt; head -40 $R/wg128_cases.txt
date
