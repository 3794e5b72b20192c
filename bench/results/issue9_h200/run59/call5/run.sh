#!/bin/bash
# Run 59 call 5 (the session's last ~6 device minutes): the whole suite on the H200 host's 16 cores
# at the final engine code (../shared/gpu-machine/REMOTE.txt's call with a 190 s ctest limit).
set -o pipefail; bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 && . /tmp/edgevla-env.sh && cd /tmp/b && timeout 190 ctest -j16 --output-on-failure -E '^(python_client|mcap_js_conformance)$' > $OUT/ctest.log 2>&1; rc=$?; grep -E "tests passed|tests failed|Total Test time" $OUT/ctest.log; grep -E "\(Failed\)|\(Timeout\)|Not Run" $OUT/ctest.log | head; exit $rc
