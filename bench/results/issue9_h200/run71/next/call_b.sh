#!/bin/bash
# Prepared in run 71: REMOTE.txt's whole suite on the host's 16 cores at the current code, with
# --output-on-failure (run 71's call 2 lost report_html_page's output: it failed once there and
# passed twice after), the GPU tests' log kept. Send within 30 s of call_a.sh to find its build.
# Predicted: all pass but Install.deb (the machine's own reason).
exec > $OUT/run.log 2>&1
export CUDAARCHS=90
[ -x /tmp/b/bin/edgevla ] || { bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 || exit 1; }
cmake --build /tmp/b > $OUT/build_inc.log 2>&1; echo "incremental build rc=$?"
. /tmp/edgevla-env.sh
cd /tmp/b && timeout 420 ctest -j16 --timeout 300 --output-on-failure -E '^(python_client|mcap_js_conformance|mcap_js_foxglove|mcap_js_bridge|Install.custom_node)$' > $OUT/ctest.log 2>&1
echo "ctest rc=$?"
grep -E "tests passed|\(Failed\)|FAIL:" $OUT/ctest.log | head -20
cp /tmp/b/Testing/Temporary/LastTest.log $OUT/ 2>/dev/null; gzip -f $OUT/LastTest.log 2>/dev/null
