#!/bin/bash
# Prepared in run 63 for the next session's first call (~9 min, not yet run). Two changes:
# (a) the backbones' own kernels (norms, attention, RoPE, GeGLU) chained behind the cuBLASLt GEMM
# before each (EDGEVLA_CUDA_BACKBONE_CHAIN=1: both families' towers and LLMs) against plain
# launches, alternated three times (GR00T), twice (pi0.5);
# (b) pi0.5's backbone writing each layer's keys and values into the cache from its RoPE kernel
# (rope_into_cache, committed) against the two copies a layer it replaced (the plugin rebuilt
# with rope_into_cache.patch, the engine's hunk alone, reversed: one file recompiles), alternated
# twice. Run 63's timeline: the
# copies take 1.5-2.1 µs each with ~2 µs of gaps, rope to attention 5.5 µs a layer.
# Predicted (b): pi0.5 −0.04 to −0.08 ms at both view counts.
# Run 63's timeline put the two views' idle time (~0.13 ms of 7.13 untraced) mostly in the
# backbone's 355 plain launch hops; run 26 measured chained launches +0.4 ms in a head with every
# GEMM on cuBLASLt, so this may lose. Predicted: backbone −0.02 to −0.05 ms at two views (~145
# hops behind a GEMM at ~0.3 µs), pi0.5 −0.02 to −0.04, or a loss as in run 26.
# The GPU suite first (both families' tests check the chained form bit for bit); PyTorch's
# GR00T (compile + graph) beside it.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
# CUPTI sits at the toolkit's versioned path on the GPU machine (run 63 call 1).
CUPTI_ARGS=()
if ! ls /usr/local/cuda/extras/CUPTI/include/cupti.h /usr/local/cuda/include/cupti.h > /dev/null 2>&1; then
  H=$(find /usr/local -name cupti.h 2>/dev/null | head -1); L=$(find /usr/local -name "libcupti.so*" 2>/dev/null | head -1)
  [ -n "$H" ] && [ -n "$L" ] && CUPTI_ARGS=(-DCUDAToolkit_CUPTI_INCLUDE_DIR=$(dirname $H) -DCUDA_cupti_LIBRARY=$L)
fi
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b "${CUPTI_ARGS[@]}" > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
grep -h "BACKBONE_CHAIN" $R/ctest_gpu.log | head -5
. $REPO/bench/results/issue9_h200/show.sh
for i in 0 1 2; do
  for c in 0 1; do
    EDGEVLA_CUDA_BACKBONE_CHAIN=$c EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_c${c}_$i.out 2> $R/groot_c${c}_$i.err
    echo "groot chain=$c $i rc=$?"; show $R/groot_c${c}_$i.out
  done
done
date
LIB=/tmp/b/lib/libedgevla_backend_cuda.so
cp $LIB /tmp/new.so
P=bench/results/issue9_h200/run63/next/rope_into_cache.patch
git apply -R $P && cmake --build /tmp/b --target edgevla_backend_cuda > $R/build_copies.log 2>&1; echo "copies build rc=$?"
cp $LIB /tmp/copies.so; cp /tmp/new.so $LIB; git apply $P
for i in 0 1; do
  for arm in new:0 copies:0 new:1; do
    so=${arm%:*}; c=${arm#*:}; cp /tmp/$so.so $LIB
    EDGEVLA_CUDA_BACKBONE_CHAIN=$c EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_${so}_c${c}_$i.out 2> $R/pi0_${so}_c${c}_$i.err
    echo "pi0.5 $so chain=$c $i rc=$?"; show $R/pi0_${so}_c${c}_$i.out
  done
done
cp /tmp/new.so $LIB
date
if [ $SECONDS -lt 470 ]; then
  EDGEVLA_CUDA_BACKBONE_CHAIN=1 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 2 --warmup 10 --timeline 3 --timeline-csv $R/groot_c1_tl > $R/groot_c1_tl.out 2> $R/groot_c1_tl.err
  echo "groot chain=1 timeline rc=$?"; show_timeline $R/groot_c1_tl.out
  python3 $REPO/bench/timeline_csv.py $R/groot_c1_tl_2v.csv --chunk 1 --top 12
  gzip -f $R/*.csv
fi
if [ $SECONDS -lt 520 ]; then
  timeout 70 python3 $REPO/bench/torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.json > $R/torch_groot.log 2>&1
  echo "torch groot rc=$?"; grep '^compile' $R/torch_groot.log
fi
date
