#!/bin/bash
# Run 45 call 1 (run 44's next/call_a.sh as prepared): short key walks
# (AttentionArgs::short_keys, EDGEVLA_ATTN_SHORT_KEYS=1, built after run 44's device time, never
# run on a GPU): a walk of at most 32 keys at head dims up to 48 (GR00T's DiT self-attention, 17
# keys) in one 32-key tile instead of a 64-key one with 47 masked keys (107-122 registers, no
# spills). Run 44 call 2 found head dim 48's own instance worth −0.6 to −0.75 µs a call and
# twice that on the head's critical path (−0.10 to −0.19 ms), more than its zeros predicted.
# 1. the whole GPU suite (its new CudaAttention.ShortKeyWalksMatch asks for the form), then the
#    GR00T engine tests again with EDGEVLA_ATTN_SHORT_KEYS=1;
# 2. the kernel bench's DiT self-attention with 0 / 1;
# 3. GR00T's head with 1 / 0 alternated twice.
# Predicted: the self-attention 3.78 → 3.3-3.5 µs; head −0.02 to −0.06 ms. If the suite passes
# and the head gains, the default becomes 1 (attention.cu, short_keys_on).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rn; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 250 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/LastTest_default.log 2>/dev/null
(cd /tmp/b && EDGEVLA_ATTN_SHORT_KEYS=1 timeout 150 ctest -R "CudaGroot|groot" -L gpu -j6 --output-on-failure > $R/ctest_groot_short.log 2>&1; echo "ctest groot short keys rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_groot_short.log | head -20)
for k in 1 0; do
  EDGEVLA_ATTN_SHORT_KEYS=$k timeout 60 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape groot_dit_self --repeat 50 > $R/kern_self_short$k.out 2>&1
  echo "short keys=$k"; grep -h '"attention_shape"' $R/kern_self_short$k.out | head -2
done
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for k in 1 0; do
    EDGEVLA_ATTN_SHORT_KEYS=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_short${k}_$round.out 2> $R/groot_short${k}_$round.err
    echo "groot short keys=$k"; show $R/groot_short${k}_$round.out
  done
done
date
