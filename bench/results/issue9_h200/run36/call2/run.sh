#!/bin/bash
# Run 36 call 2: do the activations' reads limit the heads' warpgroup GEMMs? At 50-56 rows a
# block reads as many activation bytes from L2 as weight bytes (56 rows x 64 k against 64
# features x 64 k a stage), so every GEMM moves ~2x its weights from L2 into shared memory.
# Probe 1: every GEMM shape at 8 and 24 rows against its own (--rows; fewer activation bytes,
# the same weights and the same multiplies). Probe 2: Nsight Compute's speed-of-light and memory
# sections on gate|up and GR00T's ff1 (L2 and DRAM throughput against their peaks).
# Predicted: if the activations' reads cost, 8 rows is 1-2 us faster on gate|up / ff1 and near
# the read-only kernel; then multicasting each activation tile over a cluster of feature blocks
# is worth building.
exec > $OUT/run.log 2>&1
R=/tmp/r2; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
summ() { python3 -c "
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    d=json.loads(l)
    if d.get('bench')!='gemm': continue
    w=d.get('wgmma') or {}
    print(' ', d['shape'], 'm', d['m'], 'wgmma', w.get('bf16_us', w.get('parts_8_us')), 'parts4', w.get('parts_4_us'), 'read_only', d['read_only_us'], 'cublaslt', d['cublaslt_us'])
" $1; }
for rows in 50 8 24 50 8; do
  timeout 120 $K --only gemm --repeat 30 --rows $rows > $R/gemm_rows$rows.out 2> $R/gemm_rows$rows.err
  echo "rows $rows"; summ $R/gemm_rows$rows.out
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for sh in gate_up groot_ff1; do
  timeout 120 $NCU --kernel-name-base mangled --kernel-name regex:"WgmmaEpilogueE0ELi1E" --launch-count 3 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
    $K --only gemm --shape $sh --repeat 3 > $R/ncu_$sh.txt 2>&1
  echo "ncu $sh rc=$?"; grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Memory Throughput|Mem Busy|Max Bandwidth" $R/ncu_$sh.txt | head -24
done
