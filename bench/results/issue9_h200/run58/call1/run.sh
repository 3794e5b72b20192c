#!/bin/bash
# Prepared in run 57 (~9 min, not yet run): two opt-in forms of the warpgroup attention, built and
# tested here without a GPU after the session's device time was spent.
#  1. EDGEVLA_ATTN_WG256_ROLES=1: Gemma's prefix (head dim 256, one warpgroup a block) with its
#     copies from a producer warp on per-stage "free" mbarriers, no block barrier in the walk
#     (what took the towers' attention 14.3 → 13.4 µs in call 3). Run 49's ablation had the
#     prefix's copies, waits and barriers at 20.2 of its 33.6 µs (three views).
#     Also for the action expert's attention on that kernel (EDGEVLA_ATTN_WG_EXPERT=1, which
#     was 0.23-0.28 ms slower a pi0.5 head in run 40 with thread 0 copying between barriers).
#  2. EDGEVLA_ATTN_WG128_B=1 (GR00T's LLM on the warpgroup kernel): now one warpgroup a block
#     by default for block b (the producer warp's form, 9.5-9.6 µs against narrow attn_bf16's
#     9.9 at two views in calls 3-4; two warpgroups 10.6-10.8).
#  3. EDGEVLA_ATTN_QK_TRIM=1: the towers' q·kᵀ over 80 of head dim 128's dims (5 of 8 steps; the
#     same products). Call 2: without q·kᵀ after the first tile the two-view tower took 12.9
#     instead of 14.3 µs.
# The GPU suite (the attention tests run every form), pi0.5 and GR00T's GPU tests with both on,
# the kernel bench's rows, the engines alternated twice.
# Predicted: suite passes; prefix 33.5 → 30-32 µs at three views (pi0.5 −0.03 to −0.05 ms); the
# towers −0.2 to −0.5 µs (engines within the spread).
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
(cd /tmp/b && timeout 200 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20
 EDGEVLA_ATTN_WG256_ROLES=1 EDGEVLA_ATTN_QK_TRIM=1 EDGEVLA_ATTN_WG128_B=1 EDGEVLA_ATTN_WG_EXPERT=1 timeout 150 ctest -L gpu -R "CudaGroot|CudaPi0|cuda_replay" -j6 --output-on-failure > $R/ctest_forms.log 2>&1; echo "family tests with both rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_forms.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
K=$BP/edgevla_bench_cuda_kernels
for sh in pi05_prefix_3view pi05_prefix_1view groot_siglip_2view siglip_3view groot_siglip_1view groot_llm_causal_2view; do
  timeout 40 $K --only attention_shapes --shape $sh --repeat 30 > $R/shape_$sh.out 2>&1
  echo "$sh rc=$?"
  grep -h '"attention_shape"' $R/shape_$sh.out | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    if d['splits_asked'] in ('plan', 'narrow', 'wgt1', 'wgtr1', 'wg128r_1', 'wg128rt_1', 'wg128p_2', 'wg128pt_2'):
        print('   ', d['splits_asked'].ljust(10), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
date
. $REPO/bench/results/issue9_h200/show.sh
for arm in 0 r t e 0 r t e; do [ $SECONDS -gt 500 ] && break
  case $arm in 0) env="EDGEVLA_ATTN_WG256_ROLES=0";; r) env="EDGEVLA_ATTN_WG256_ROLES=1";; t) env="EDGEVLA_ATTN_WG256_ROLES=1 EDGEVLA_ATTN_QK_TRIM=1";;
    e) env="EDGEVLA_ATTN_WG256_ROLES=1 EDGEVLA_ATTN_WG_EXPERT=1";; esac
  env $env EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$arm.out 2> $R/pi0_$arm.err
  echo "pi0.5 $env rc=$?"; show $R/pi0_$arm.out
done
for arm in 0 t b 0 t b; do [ $SECONDS -gt 540 ] && break
  case $arm in 0) env="EDGEVLA_ATTN_QK_TRIM=0";; t) env="EDGEVLA_ATTN_QK_TRIM=1";; b) env="EDGEVLA_ATTN_QK_TRIM=1 EDGEVLA_ATTN_WG128_B=1";; esac
  env $env EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.out 2> $R/groot_$arm.err
  echo "groot $env rc=$?"; show $R/groot_$arm.out
done
date
