#!/bin/bash
# Run 59 call 2: the GPU suite at EDGEVLA_CUDA_GROOT_OVERLAP=1 (new default); GR00T with it on and
# off, alternated twice (stages alone: the head's once-a-chunk part); PyTorch's GR00T in the same
# run. Predicted: suite passes; E2E −0.03 to −0.06 ms at both view counts (the text keys|values
# GEMM beside the image one −0.02 to −0.03, the backbone's pixel check after the launch −0.01 to
# −0.02, the head's host copies first −0.005); once-a-chunk 0.135-0.168 → 0.10-0.13 ms.
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
(cd /tmp/b && timeout 260 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for arm in 1 0 1 0; do [ $SECONDS -gt 420 ] && break
  EDGEVLA_CUDA_GROOT_OVERLAP=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone 1 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot overlap $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
done
date
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    v = {k: (x.get('e2e_ms', {}).get('median') if isinstance(x.get('e2e_ms'), dict) else x.get('e2e_ms'),
             x.get('head_steps_ms') or x.get('head_ms')) for k, x in d.get('variants', {}).items()}
    print('torch_groot views', d.get('views'), v, 'floor', fl.get('floor_ms'), 'head floor', fl.get('head_steps_floor_ms'))
PY
date
