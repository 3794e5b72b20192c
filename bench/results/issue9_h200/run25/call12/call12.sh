#!/bin/bash
# Session 2026-11-26b call 8: GPU tests after pi0's o and down projections moved to k parts.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/call12.sh $R/; tar czf $OUT/results12.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log)
grep -h "pi0 \|rel-L2\|cosine" $R/gpu_ctest.log | head -40
date
