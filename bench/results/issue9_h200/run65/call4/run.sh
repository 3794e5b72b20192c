# Run 65 call 4 (the session's last device seconds): GeneratedDirs::get, built after call 3, on
# the GPU: GR00T's tiny cases (both suites of cuda_groot_test), pi0's tiny cases and the test on
# the full-layer checkpoints; then nothing may be left under /tmp/edgevla-gpu-*.
export CUDAARCHS=90 EDGEVLA_TARGETS="cuda_groot_test cuda_pi0_test"
bash .debs/build.sh . /tmp/b > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
. /tmp/edgevla-env.sh
/tmp/b/bin/cuda_groot_test --gtest_filter='*/tiny' > $OUT/groot.log 2>&1; echo "groot rc=$?"; tail -3 $OUT/groot.log
/tmp/b/bin/cuda_pi0_test --gtest_filter='*tiny*:CudaPi0Wgmma.TheWarpgroupGemmsAgreeWithBlas' > $OUT/pi0.log 2>&1; echo "pi0 rc=$?"; tail -3 $OUT/pi0.log
ls -d /tmp/edgevla-gpu-* 2>/dev/null | sed "s/^/left behind: /"; echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
