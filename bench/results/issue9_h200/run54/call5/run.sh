#!/bin/bash
# Run 54, call 5 (~6 min, the session's last device minutes): head dims 65-128 on the warpgroup
# kernel (attention_wg.cu at head dim 128, K and V by 4-d bulk tensor copies whose dims past h read
# as zeros; EDGEVLA_ATTN_WG128 / AttentionArgs::wg_narrow, off by default). Call 4 found cuDNN's
# kernel at GR00T's two-view tower 11.48 µs against attn_bf16's 15.90 (same timing method), its
# warps issuing a third as many instructions (attn_bf16: 'selected' 24 % and 'wait' 28 % of stall
# samples, one warp and a half a scheduler). Its test, the bench rows wg128_*, then GR00T and pi0.5
# with EDGEVLA_ATTN_WG128 0 / 2 alternated.
# Predicted: the test passes; GR00T two-view tower 15.9 → 11-13 µs, one view ~10.8 → 10-11; GR00T
# backbone −0.05 to −0.12 ms at two views, pi0.5 −0.03 to −0.09 at three.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 100 ctest -R "cuda_attention" -j3 --output-on-failure > $R/ctest.log 2>&1; echo "ctest attention rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*|Expected|Which is|rel-L2 [1-9]" $R/ctest.log | head -30)
grep -h "wg128" /tmp/b/Testing/Temporary/LastTest.log | head -40 > $R/wg128_cases.txt; wc -l < $R/wg128_cases.txt
for sh in groot_siglip_2view groot_siglip_1view siglip_3view siglip_1view groot_llm_1view groot_llm_2view; do
  timeout 30 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 30 > $R/attn_$sh.out 2>&1
  echo "$sh rc=$?"
  grep attention_shape $R/attn_$sh.out | grep -E '"(plan|narrow|wg128_[12]|wg128_[12]s1)"' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('  ', d['splits_asked'].ljust(12), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 2 0 2; do
  EDGEVLA_ATTN_WG128=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot WG128=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 2; do
  EDGEVLA_ATTN_WG128=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 WG128=$v rc=$?"; show $R/pi0_$v.out
done
date
