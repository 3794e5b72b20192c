#!/bin/bash
# Prepared in run 55 for the next session's first call (~7 min). Not yet run on a GPU: the
# warpgroup attention at head dim 128 with block b (AttentionArgs::wg_narrow_b /
# EDGEVLA_ATTN_WG128_B, off by default: GR00T's LLM, causal over packed keys, 13.5 µs a layer on
# attn_bf16 at two views against ~10.7 for cuDNN) and its test WarpgroupKernelTakesHeadDim128BlockB;
# the q/k norm + RoPE and SwiGLU kernels merged into one each (same arithmetic as run 55 call 2);
# the LLM's RoPE angles from a table made once at load (the same bits; q/k norm + RoPE 5.0 µs a
# layer in run 55 call 3's breakdown, predicted ≤ 4.5).
# The GPU suite; GR00T with WG128_B 0 / 1 alternated twice; PyTorch's GR00T once; the backbone
# by kernel at two views.
# Predicted: 127/127; GR00T backbone −0.02 to −0.05 ms at two views with WG128_B=1, −0.01 to −0.03
# at one.
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
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
zcat $R/LastTest.log.gz | grep -h "groot llm block b\|h 128 wg128" | head -24
# The LLM's causal call alone: attn_bf16's rows against wg128_1 / wg128_2 (block b at head dim 128).
for sh in groot_llm_causal_1view groot_llm_causal_2view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 30 > $R/attn_$sh.out 2>&1
  echo "$sh rc=$?"
  grep attention_shape $R/attn_$sh.out | grep -E '"(plan|narrow|wg128_[12]|wg128_[12]s1)"' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('  ', d['splits_asked'].ljust(12), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_ATTN_WG128_B=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot WG128_B=$v rc=$?"; show $R/groot_$v.out
done
# The GR00T CPU comparison with it on (the engine's LLM on the new form).
(cd /tmp/b && EDGEVLA_ATTN_WG128_B=1 timeout 120 ctest -L gpu -R "CudaGroot" -j4 --output-on-failure > $R/ctest_groot_b.log 2>&1; echo "groot tests WG128_B=1 rc=$?"; grep -E "tests passed|Failed" $R/ctest_groot_b.log | head)
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    print('views', d['views'], {k: (v['e2e_ms']['median'], v['backbone_ms']['median']) for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms'), 'head steps floor', fl.get('head_steps_floor_ms'))
PY
date
cd $REPO
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/ncu_groot_backbone_v2.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 2 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot backbone v2 rc=$?"
python3 bench/kernel_breakdown.py edgevla_v2=$R/ncu_groot_backbone_v2.csv --top 30 > $R/breakdown_backbone_v2.txt 2>&1
gzip -f $R/ncu_groot_backbone_v2.csv
head -36 $R/breakdown_backbone_v2.txt
date
