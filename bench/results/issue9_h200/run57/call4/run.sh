#!/bin/bash
# Run 57, call 4 (~6 min): the producer-warp form (the default since call 3, EDGEVLA_ATTN_WG_ROLES=1)
# against the same with the two warpgroups taking turns at issuing their multiplies (=2, barriers 4
# and 5 between the warpgroups, as a flash-attention kernel on Hopper schedules them), so that one
# warpgroup's softmax runs under the other's multiplies. Tests (all forms), both families' GPU tests
# with 2, the kernel bench, the engines alternated twice.
# Predicted: tests pass; GR00T's two-view tower 13.4 → 12.5-13 µs with turns; engines within
# ±0.03 ms (27 layers × ≤ 1 µs).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 150 ctest -L gpu -R "CudaAttention" -j6 --output-on-failure > $R/ctest_attention.log 2>&1; echo "attention tests rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*|Expected|Which is" $R/ctest_attention.log | head -20
 EDGEVLA_ATTN_WG_ROLES=2 timeout 150 ctest -L gpu -R "CudaGroot|CudaPi0|cuda_replay" -j6 --output-on-failure > $R/ctest_roles.log 2>&1; echo "family tests ROLES=2 rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_roles.log | head -20)
wait; date
K=$BP/edgevla_bench_cuda_kernels
for sh in groot_siglip_2view siglip_3view groot_siglip_1view groot_llm_causal_2view; do
  timeout 40 $K --only attention_shapes --shape $sh --repeat 30 > $R/shape_$sh.out 2>&1
  echo "$sh rc=$?"
  grep -h '"attention_shape"' $R/shape_$sh.out | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    if d['splits_asked'] in ('plan', 'narrow', 'wg128_2', 'wg128r_1', 'wg128r_2', 'wg128p_2'):
        print('   ', d['splits_asked'].ljust(10), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
date
. $REPO/bench/results/issue9_h200/show.sh
for arm in 1 2 1 2; do
  EDGEVLA_ATTN_WG_ROLES=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.out 2> $R/groot_$arm.err
  echo "groot ROLES=$arm rc=$?"; show $R/groot_$arm.out
done
for arm in 1 2 1 2; do
  EDGEVLA_ATTN_WG_ROLES=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$arm.out 2> $R/pi0_$arm.err
  echo "pi0.5 ROLES=$arm rc=$?"; show $R/pi0_$arm.out
done
date
