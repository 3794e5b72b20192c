#!/bin/bash
# Run 45 call 2 (run 44's next/call_b.sh as prepared, ~6 min after call 1): what each kernel class costs on the chained heads'
# critical path at today's defaults. Run 36 measured it last (pi0.5 head 6.50 ms: attention +
# combine 10.6 µs a layer-step, gate|up 7.8, the norms 5.2, down 5.1, q|k|v 4.9, o 3.9, RoPE 2.2;
# GR00T head 4.76 ms: ff1 9.3 µs a block-step, ff2 7.2, attention 4.8, the norms 4.5, q 4.1, out
# 3.4); since then: 8 k parts, narrow attention blocks, head dim 48, the step edges on the
# warpgroup GEMM. Every class left out in turn (a build with -DEDGEVLA_CUDA_ABLATION=ON, outputs
# wrong, timings only), both heads at both view counts, `none` first and last. Predicted: pi0.5's
# attention + combine ~9.5 µs a layer-step (narrow blocks took ~0.8 µs), GR00T's attention ~3.3.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rb; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF -DEDGEVLA_CUDA_ABLATION=ON > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for k in none norm qkv rope attention o gate_up down none; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_$k.out 2> $R/pi0_$k.err
  echo "pi0.5 without $k"; show $R/pi0_$k.out
done
for k in none norm qkv attention out ff1 ff2 edges none; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_$k.out 2> $R/groot_$k.err
  echo "groot without $k"; show $R/groot_$k.out
done
date
