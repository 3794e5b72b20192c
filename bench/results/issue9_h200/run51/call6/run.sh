#!/bin/bash
# Run 51, call 6 (the last ~2.5 device minutes): call 5's test again after the side stream's GEMMs
# got their own Blas. Call 5 failed only in f32 replays (rel-L2 0.08-0.19 against the CPU): there
# every DiT projection is a cuBLASLt GEMM, and the side GEMMs shared the engine's one cuBLASLt
# workspace with them at once. Predicted: f32 within 1e-4 in every round.
exec > $OUT/run.log 2>&1
date
export CUDAARCHS=90
EDGEVLA_TARGETS="cuda_groot_test" bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1; echo "build rc=$?"
grep -q "FAILED" /tmp/build.log && { grep -A12 "FAILED" /tmp/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
cd /tmp/b && timeout 60 ctest -R "CudaGroot\.CrossKeys" -j2 --output-on-failure > $OUT/ctest_crosskeys.log 2>&1; echo "ctest rc=$?"
grep -E "tests passed|FAILED|Failed" $OUT/ctest_crosskeys.log | head; grep -h "keys|values beside" $OUT/ctest_crosskeys.log | head -20
date
