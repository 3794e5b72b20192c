#!/bin/bash
# Run 67 call 2: REMOTE.txt's call (the whole suite on the GPU host's 16 cores) after the
# preprocess stage's thread pool (new threading, checked before only on the 2-core VM). Reuses
# call 1's /tmp/b when the machine is still warm. Left out as in run 65 call 2: the tests that
# machine cannot run (no Node.js; the Debian libraries in a private prefix that dpkg and the
# compiler's include path do not know). Then: no edgevla-gpu-* folder may be left.
set -o pipefail
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
. /tmp/edgevla-env.sh && cd /tmp/b || exit 1
timeout 400 ctest -j16 --output-on-failure \
  -E '^(python_client|mcap_js_conformance|mcap_js_foxglove|mcap_js_bridge|Install.custom_node)$' > $OUT/ctest.log 2>&1
rc=$?
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $OUT/LastTest.log.gz
tail -30 $OUT/ctest.log
ls -d /tmp/edgevla-gpu-* 2>/dev/null | sed "s/^/left behind: /"
echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
exit $rc
