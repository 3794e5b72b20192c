#!/bin/bash
# Prepared in run 65 (not yet run): PyTorch's GR00T baseline with inductor's GEMM autotuning, so
# that the 1.5x target is judged against the fastest torch.compile mode and not only `default`
# (issue 9's README: max-autotune was tried once on pi0.5 and never finished a call).
# Usage: bash call_b.sh VIEWS   (1, then 2 on the warm machine: /tmp keeps the checkpoint and
# inductor's autotuning cache between the two calls, so the DiT's shapes are tuned once).
# Each call: edgevla's GR00T and PyTorch's default and max-autotune-no-cudagraphs modes, same run.
# Predicted: max-autotune within ±3 % of default (run 1's partial pi0.5 run: cuBLAS and the Triton
# templates each won some shapes by small margins); if it is faster, the ratios are reported
# against it.
V=${1:-1}
exec > $OUT/run.log 2>&1
REPO=$PWD; R=$OUT
date
if [ ! -x /tmp/b/bin/edgevla ]; then
  export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -60; exit 1; }
fi
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/groot ] || $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1
date
. $REPO/bench/results/issue9_h200/show.sh
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views $V --repeat 50 --warmup 10 > $R/groot_a.out 2> $R/groot_a.err
echo "groot rc=$?"; show $R/groot_a.out
cd $REPO/bench
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache
timeout 420 python3 torch_groot.py --checkpoint /tmp/groot --views $V --variants compile \
  --compile-modes default,max-autotune-no-cudagraphs --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
tail -5 $R/torch_groot.err
python3 -c "
import json
for l in open('$R/torch_groot.jsonl'):
    d = json.loads(l)
    for k, x in d.get('variants', {}).items():
        print('torch views', d.get('views'), k, 'best mode', x.get('mode'), 'e2e', x.get('e2e_ms', {}).get('median'), 'modes', x.get('modes_tried'))
"
cd $REPO
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views $V --repeat 50 --warmup 10 > $R/groot_b.out 2> $R/groot_b.err
echo "groot rc=$?"; show $R/groot_b.out
date
