#!/bin/bash
# Run 54, call 3 (~6 min): paired rows for the vision towers' attention (EDGEVLA_ATTN_PAIRED /
# AttentionArgs::paired: 128-row blocks, each warp two 16-row tiles, so every K/V fragment a warp
# reads from shared memory serves 32 rows). Call 2 found two key groups no faster than one at 192
# blocks (15.98 vs 15.88 µs) and narrow blocks slower (16.6): the busy multiprocessors' shared-memory
# reads (each warp re-reads every K and V tile: ~1.1 MB a multiprocessor at two views), not the
# warps' latency, looked like the limit. Tests (PairedRowsMatch, the attention suites, both engines'
# tests with it on), the bench's paired_s1 / _s2 rows, then GR00T (1, 2 views) and pi0.5 (1, 3)
# with EDGEVLA_ATTN_PAIRED 0 / 1 alternated twice.
# Predicted: tower attention at two views 15.9 → 11-13 µs (bench), GR00T backbone −0.05 to −0.1 ms
# at two views, pi0.5 −0.05 to −0.1 at three; one view unchanged (not taken there).
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
for sh in groot_siglip_2view siglip_3view groot_siglip_1view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 30 > $R/attn_$sh.out 2>&1
  echo "$sh rc=$?"
  grep attention_shape $R/attn_$sh.out | grep -E '"(plan|1|g2s1|paired_s1|paired_s2)"' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('  ', d['splits_asked'].ljust(12), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
(cd /tmp/b && timeout 150 ctest -R "cuda_attention" -j4 --output-on-failure > $R/ctest.log 2>&1; echo "ctest attention rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest.log | head -20)
grep -h "paired" /tmp/b/Testing/Temporary/LastTest.log | head -30 > $R/paired_cases.txt; wc -l < $R/paired_cases.txt; grep -c "rel-L2" $R/paired_cases.txt
wait; date
(cd /tmp/b && EDGEVLA_ATTN_PAIRED=1 timeout 240 ctest -R "cuda_groot_test|cuda_pi0_test|cuda_attention_test" -j6 --output-on-failure > $R/ctest_paired.log 2>&1; echo "ctest PAIRED=1 rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_paired.log | head -20)
date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_ATTN_PAIRED=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot PAIRED=$v rc=$?"; show $R/groot_$v.out
  EDGEVLA_ATTN_PAIRED=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 PAIRED=$v rc=$?"; show $R/pi0_$v.out
done
date
