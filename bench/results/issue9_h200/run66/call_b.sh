#!/bin/bash
# Prepared in run 65 (not yet run): the PyTorch baselines with inductor's GEMM autotuning, so that
# the 1.5x targets are judged against the fastest torch.compile mode, not only `default` (issue 9's
# README: max-autotune was tried once, on pi0.5, and never finished a call).
# Usage: bash call_b.sh groot|pi05 VIEWS
#   groot 1, then groot 2, then pi05 1, pi05 3 — one call each, on the warm machine: /tmp keeps the
#   build, the checkpoints and inductor's autotuning cache between calls, so the heads' shapes are
#   tuned once per family.
# Each call: edgevla, then PyTorch's default and max-autotune-no-cudagraphs modes, then edgevla
# again, all in the same call.
# Predicted: max-autotune within ±3 % of default (run 1's partial pi0.5 run: cuBLAS and the Triton
# templates each won some shapes by small margins). If it is faster, the ratios are reported
# against it.
F=${1:-groot}; V=${2:-1}; TL=${3:-}
exec > $OUT/run.log 2>&1
REPO=$PWD; R=$OUT
date
if [ ! -x /tmp/b/bin/edgevla ]; then
  export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -60; exit 1; }
fi
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
if [ "$F" = groot ]; then
  CK=/tmp/groot; BENCH="$BP/edgevla_bench_cuda_groot"; TORCH=torch_groot.py; TLIM=420
  [ -d $CK ] || $E model init --family groot --config full --dtype bf16 --seed 0 --out $CK > /dev/null 2>&1
else
  CK=/tmp/pi05; BENCH="$BP/edgevla_bench_cuda_pi0"; TORCH=torch_pi0_cuda.py; TLIM=480
  [ -d $CK ] || $E model init --config pi05 --dtype bf16 --seed 0 --out $CK > /dev/null 2>&1
fi
date
. $REPO/bench/results/issue9_h200/show.sh
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_$F.txt timeout 90 $BENCH --checkpoint $CK --views $V --repeat 50 --warmup 10 > $R/edgevla_a.out 2> $R/edgevla_a.err
echo "edgevla rc=$?"; show $R/edgevla_a.out
cd $REPO/bench
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache
timeout ${TL:-$TLIM} python3 $TORCH --checkpoint $CK --views $V --variants compile \
  --compile-modes default,max-autotune-no-cudagraphs --repeat 20 --warmup 5 --json $R/torch.jsonl > /dev/null 2> $R/torch.err
echo "torch rc=$?"
tail -5 $R/torch.err
python3 -c "
import json
for l in open('$R/torch.jsonl'):
    d = json.loads(l)
    for k, x in d.get('variants', {}).items():
        print('torch views', d.get('views'), k, 'best mode', x.get('mode'), 'e2e', x.get('e2e_ms', {}).get('median'), 'modes', x.get('modes_tried'))
"
cd $REPO
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_$F.txt timeout 90 $BENCH --checkpoint $CK --views $V --repeat 50 --warmup 10 > $R/edgevla_b.out 2> $R/edgevla_b.err
echo "edgevla rc=$?"; show $R/edgevla_b.out
date
