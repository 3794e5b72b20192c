#!/bin/bash
# Run 54, call 2 (~6 min): GR00T's vision-tower attention at two views runs 192 one-group blocks of
# 64 rows on 132 multiprocessors (17.3 µs isolated, call 1; torch.compile's cuDNN kernel ~10.7), each
# block walking all six key tiles with one warp a scheduler. Launch shapes asked for explicitly
# (AttentionArgs::key_groups / ::shares, the kernel bench's g<G>s<N> rows) at GR00T's tower and LLM
# shapes; the new test (KeyGroupsAndSharesAsAskedMatch) and the attention suites; then
# EDGEVLA_ATTN_TWO_BLOCKS 0 / 1 (two-group blocks where they fill one wave of two a multiprocessor)
# alternated twice in GR00T's engine. RESIDUAL taken out after call 1 (+1.77 ms).
# Predicted: tower attention at two views 15.9 → 10-12 µs in the bench (g2s1); backbone −0.1 to −0.2
# ms at two views, one view unchanged (its plan is already two groups).
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
for sh in groot_siglip_1view groot_siglip_2view groot_llm_1view groot_llm_2view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 30 > $R/attn_$sh.out 2>&1
  echo "$sh rc=$?"
  grep attention_shape $R/attn_$sh.out | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('  ', d['splits_asked'].ljust(12), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
(cd /tmp/b && timeout 200 ctest -R "cuda_attention|cuda_groot_test" -j4 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest.log | head -20)
(cd /tmp/b && EDGEVLA_ATTN_TWO_BLOCKS=1 timeout 200 ctest -R "cuda_attention|cuda_groot_test" -j4 --output-on-failure > $R/ctest_two.log 2>&1; echo "ctest TWO_BLOCKS=1 rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_two.log | head -20)
grep -h "g[12]s[123] " /tmp/b/Testing/Temporary/LastTest.log | head -40 > $R/groups_cases.txt; wc -l < $R/groups_cases.txt
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_ATTN_TWO_BLOCKS=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot TWO_BLOCKS=$v rc=$?"; show $R/groot_$v.out
done
date
