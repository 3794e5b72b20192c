# Run 65 call 2: REMOTE.txt's call (the whole suite on the GPU host's 16 cores) at the session's
# engine code (run 64's norm kernels and the towers' bf16 stream), built for cc 9.0 only, with the
# tests that machine cannot run left out (no Node.js; the Debian libraries in a private prefix that
# dpkg and the compiler's include path do not know). Then: no edgevla-gpu-* folder may be left.
set -o pipefail; export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }; . /tmp/edgevla-env.sh && cd /tmp/b && timeout 330 ctest -j16 --output-on-failure -E '^(python_client|mcap_js_conformance|mcap_js_foxglove|mcap_js_bridge|Install.custom_node)$' > $OUT/ctest.log 2>&1; rc=$?; gzip -c /tmp/b/Testing/Temporary/LastTest.log > $OUT/LastTest.log.gz; tail -30 $OUT/ctest.log; ls -d /tmp/edgevla-gpu-* 2>/dev/null | sed "s/^/left behind: /"; echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"; exit $rc
