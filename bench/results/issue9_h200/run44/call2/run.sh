#!/bin/bash
# Run 44 call 2 (~7 min), narrow blocks now the default (EDGEVLA_ATTN_NARROW=2, call 1):
# 1. the CudaAttention tests again (ClusterSharesMatchTheCombine now pins 64-row blocks: call 1's
#    one failure under NARROW=2 was its cluster-form expectation, the outputs matched);
# 2. GR00T's DiT attention at head dim 48 on its own instance against padded to 64
#    (EDGEVLA_ATTN_HD48=1 / 0): kernel bench, then the head alternated twice. Predicted −0.06 to
#    −0.15 µs a call (3 of 4 products' dims), −0.02 to −0.05 ms a head;
# 3. run 43's call_b.sh: tiles a share at least (EDGEVLA_ATTN_MIN_TILES) 3 / 2 / 4 under narrow
#    blocks. Predicted: 2 within ±0.05 ms of 3; 4 slower at one view.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 150 ctest -R "CudaAttention" -j6 --output-on-failure > $R/ctest_attention.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_attention.log | head -20)
for h in 1 0; do
  for sh in groot_dit_self groot_dit_cross; do
    EDGEVLA_ATTN_HD48=$h timeout 60 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 50 > $R/kern_${sh}_hd48_$h.out 2>&1
    echo "hd48=$h $sh"; grep -h '^{' $R/kern_${sh}_hd48_$h.out | head -8
  done
done
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for h in 1 0; do
    EDGEVLA_ATTN_HD48=$h EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_hd48_${h}_$round.out 2> $R/groot_hd48_${h}_$round.err
    echo "groot hd48=$h"; show $R/groot_hd48_${h}_$round.out
  done
done
for round in 1 2; do
  [ $round -eq 2 ] && [ $SECONDS -gt 480 ] && break
  for t in 3 2 4; do
    EDGEVLA_ATTN_MIN_TILES=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_t${t}_$round.out 2> $R/pi0_t${t}_$round.err
    echo "pi0.5 min tiles=$t"; show $R/pi0_t${t}_$round.out
    EDGEVLA_ATTN_MIN_TILES=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_t${t}_$round.out 2> $R/groot_t${t}_$round.err
    echo "groot min tiles=$t"; show $R/groot_t${t}_$round.out
  done
done
date
