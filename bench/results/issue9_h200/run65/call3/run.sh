#!/bin/bash
# Run 65 call 3: the GPU suite after the tests' clean-up fixes (checkpoints and plan files removed:
# no edgevla-gpu-* may be left), then GR00T twice beside PyTorch's torch.compile + graph once more.
exec > $OUT/run.log 2>&1
REPO=$PWD; R=$OUT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
ls -d /tmp/edgevla-gpu-* 2>/dev/null | sed "s/^/left behind: /"; echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for i in 0 1; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$i.out 2> $R/groot_$i.err
  echo "groot $i rc=$?"; show $R/groot_$i.out
done
cd $REPO/bench
timeout 120 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 -c "
import json,sys
for l in open('$R/torch_groot.jsonl'):
    d=json.loads(l); print('torch views', d.get('views'), {k:(x.get('e2e_ms',{}).get('median') if isinstance(x.get('e2e_ms'),dict) else x.get('e2e_ms')) for k,x in d.get('variants',{}).items()})
"
date
