#!/bin/bash
# Run 45 call 4 (~7 min): GR00T's vision tower at 324 rows a view.
# Call 3 put GR00T's tower at 1.59 ms of its 2.83 ms backbone (one view), its GEMMs at 9.6 / 8.1 /
# 13.3 / 16.7 µs a layer (q|k|v, o, fc1, fc2) against 6.4 / 5.2 / 7.0 / 10.7 for the same
# shapes at 256 rows (run 42 call 4): 1.27x the rows, 1.6x the time. 324 rows are 5.06 tiles of
# 64, so every GEMM pays a sixth row tile for 4 rows. Here:
# 1. the GR00T GPU tests with the tower's rows padded to 64 (EDGEVLA_CUDA_TOWER_PAD=64, new);
# 2. GR00T E2E with the pad 1 / 64 / 128 (and 32), alternated twice; narrow attention blocks
#    everywhere (EDGEVLA_ATTN_NARROW=1) once. Predicted: if cuBLASLt's picks at 384 rows beat
#    those at 324, −0.1 to −0.3 ms a backbone; if the sixth tile is the whole cost, no change;
# 3. cuBLASLt on the tower's shapes at 256 / 320 / 324 / 384 rows, and the tower's attention at
#    324 keys (kernel bench).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && EDGEVLA_CUDA_TOWER_PAD=64 timeout 150 ctest -R "Groot|groot" -L gpu -j6 --output-on-failure > $R/ctest_groot_pad64.log 2>&1; echo "ctest groot pad 64 rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_groot_pad64.log | head -20)
for sh in groot_siglip_1view groot_siglip_2view siglip_1view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 30 > $R/attn_$sh.out 2>&1
  echo "attention $sh"; grep -h '"attention_shape"' $R/attn_$sh.out | head -3
done
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for p in 1 64 128 32; do
    [ $round = 2 ] && [ $p = 32 ] && continue
    EDGEVLA_CUDA_TOWER_PAD=$p EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_pad${p}_$round.out 2> $R/groot_pad${p}_$round.err
    echo "groot tower pad $p"; show $R/groot_pad${p}_$round.out
  done
done
EDGEVLA_ATTN_NARROW=1 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_narrow1.out 2> $R/groot_narrow1.err
echo "groot narrow 1"; show $R/groot_narrow1.out
date
for rows in 256 324 384; do
  timeout 60 $BP/edgevla_bench_cuda_kernels --only backbone --rows $rows --repeat 20 > $R/gemm_rows$rows.out 2>&1
  echo "rows $rows"; grep -h '^{' $R/gemm_rows$rows.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'shape' in d: print('  ', d.get('shape'), d.get('m'), 'cublaslt', d.get('cublaslt_us'), 'blas pick', d.get('blas_pick_us'))" 2>/dev/null | head -12
done
date
