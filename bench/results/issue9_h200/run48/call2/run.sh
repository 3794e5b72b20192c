#!/bin/bash
# Run 48 call 2: the pi0 backbone's per-layer cache copies (and the image tokens' copy) on a side
# stream beside the layer, the prefix attention reading keys and values where the q|k|v GEMM
# wrote them (EDGEVLA_CUDA_CACHE_SIDE=1, the new default) against copies on the engine's stream
# (0). The GPU suite first (new test CudaPi0Layered.CacheCopiesBesideTheLayerGiveTheSameCacheAndActions).
# Predicted: two graph memcpy nodes a layer off the critical path, ~2-4 µs each: backbone −0.05 to
# −0.15 ms at one view, about the same at three; the head unchanged.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/manifest.json ] || [ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "side vs inline" /tmp/b/Testing/Temporary/LastTest.log | head -12
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for r in 1 2; do
  for cs in 1 0; do
    EDGEVLA_CUDA_CACHE_SIDE=$cs EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_cs${cs}_$r.out 2> $R/pi0_cs${cs}_$r.err
    echo "pi0.5 cache side $cs"; show $R/pi0_cs${cs}_$r.out
  done
done
date
