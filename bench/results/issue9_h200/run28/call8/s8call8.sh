#!/bin/bash
# Session 2026-11-26e call 8: head dim 256 in 16-key tiles (the kernel devices with 99 KB of
# shared memory a block now get), forced everywhere by -DEDGEVLA_ATTN_HD256_KEYS=16: the
# attention, pi0 and GR00T GPU tests; then every GPU test on the default build.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r8; mkdir -p $R
finish() { cp $REPO/.repro/s8call8.sh $R/; tar czf $OUT/results_s8c8.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; rm -rf /tmp/b /tmp/b16; date
bash .debs/build.sh . /tmp/b16 "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_HD256_KEYS=16" > $R/build16.log 2>&1 || { tail -60 $R/build16.log; exit 1; }
. /tmp/edgevla-env.sh
(cd /tmp/b16 && timeout 300 ctest -L gpu -R "[Aa]ttention|CudaPi0|CudaGroot" --output-on-failure > $R/gpu_16keys.log 2>&1; echo "16-key tests rc=$?"; grep -E "tests passed|Failed" $R/gpu_16keys.log)
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
(cd /tmp/b && timeout 300 ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu tests rc=$?"; grep -E "tests passed|Failed" $R/gpu_ctest.log; tail -2 $R/gpu_ctest.log)
date
