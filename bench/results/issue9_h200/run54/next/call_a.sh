#!/bin/bash
# Prepared in run 54 for the next session's first call (~8 min): head dims 65-128 on the warpgroup
# kernel (EDGEVLA_ATTN_WG128), measured in run 54 call 5 (GR00T backbone −0.04 ms, pi0.5 −0.08 /
# −0.12) and tested in call 6 (its kernel test, both families' CPU comparisons), off by default
# until the whole GPU suite has run with it. The suite with WG128=2; the kernel bench's tower and
# LLM rows beside PyTorch's SDPA; both families with WG128 0 / 1 / 2 alternated; PyTorch's GR00T.
# Predicted: 126/126 with it on; wg128 rows 12-14 µs at GR00T's two views (cuDNN 11.5, attn_bf16
# 15.9); one warpgroup a block within ±0.02 ms of two in the engines.
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
(cd /tmp/b && EDGEVLA_ATTN_WG128=2 timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest WG128=2 rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
for sh in groot_siglip_2view groot_siglip_1view siglip_3view siglip_1view groot_llm_1view groot_llm_2view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --repeat 30 > $R/attn_$sh.out 2>&1
  echo "$sh rc=$?"
  grep attention_shape $R/attn_$sh.out | grep -E '"(plan|narrow|wg128_[12]|wg128_[12]s1)"' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('  ', d['splits_asked'].ljust(12), d['us_per_call_in_graph'], 'us', d['tflops'], 'TF', 'rel %.1e' % d['rel_l2_vs_planned'])"
done
(cd $REPO/bench && timeout 90 python3 torch_attention_shapes.py --backend cudnn > $R/torch_attention_shapes.out 2>&1; cut -c1-160 $R/torch_attention_shapes.out)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 2 1 0 2 1; do
  EDGEVLA_ATTN_WG128=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot WG128=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 2 1; do
  EDGEVLA_ATTN_WG128=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 WG128=$v rc=$?"; show $R/pi0_$v.out
done
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
