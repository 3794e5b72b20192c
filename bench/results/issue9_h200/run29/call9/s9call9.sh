#!/bin/bash
# Session 2026-11-26f call 9: the CPU suite on the GPU host again (call 8 had one failure)'s 16 cores at the final commit.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r9; mkdir -p $R
finish() { cp $REPO/.repro/s9call9.sh $R/; gzip -f $R/cpu16_ctest.log 2>/dev/null; tar czf $OUT/results_s9c9.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
(cd /tmp/b && timeout 330 ctest -LE gpu -j16 -E '^(python_client|mcap_js_.*|Install.*)$' --output-on-failure > $R/cpu16_ctest.log 2>&1; echo "cpu16 ctest rc=$?"; tail -4 $R/cpu16_ctest.log)
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/cpu16_ctest.log | head
date
