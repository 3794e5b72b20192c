#!/bin/bash
# Run 62 call 3: call 2 left GR00T's bucket-1 arm lower at two views (head 4.015, 4.029 against
# 4.099, 4.066 ms; E2E 7.116, 7.12 against 7.195, 7.106) while its GEMM picks time the same at 220
# rows as at 224, so the only difference left is the head's cross keys (58 + 162 against 64 + 176).
# Four more alternations of 16 against 1 with the heads' steps alone, then PyTorch's GR00T (compile)
# for this session's ratio at the final code. Predicted: within ±0.03 ms (no change), or the head
# −0.03 to −0.06 at two views if the cross keys' padding tiles cost.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
$E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?
date
. $REPO/bench/results/issue9_h200/show.sh
for b in 16 1 16 1 16 1 16 1; do [ $SECONDS -gt 420 ] && break
  EDGEVLA_CUDA_ROW_BUCKET=$b EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone 1 > $R/groot_b$b.$SECONDS.out 2>&1
  echo "groot bucket $b rc=$?"; show $(ls -t $R/groot_b$b.*.out | head -1)
done
date
cd $REPO/bench
[ $SECONDS -lt 470 ] && { timeout 100 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 -c "
import json
for l in open('$R/torch_groot.jsonl'):
    d = json.loads(l); v = d['variants']['compile']
    print('torch compile views', d['views'], 'e2e', v['e2e_ms']['median'] if isinstance(v['e2e_ms'], dict) else v['e2e_ms'])"; }
date
