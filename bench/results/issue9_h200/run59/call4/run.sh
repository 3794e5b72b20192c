#!/bin/bash
# Run 59 call 4: LayerNorm with one block-wide exchange (each warp's mean and M2, merged by every
# thread; EDGEVLA_CUDA_NORM_ONE_REDUCTION=1). The GPU suite with it on; the norms bench both ways;
# GR00T alternated twice, pi0.5 once each way; PyTorch's GR00T in the same call.
# Predicted: suite passes; a LayerNorm 0.1-0.25 µs faster (two fewer warp sums, three fewer
# barriers); GR00T −0.03 to −0.07 ms (260 LayerNorms in the head's 4 steps, 54 in the tower), pi0.5
# within −0.02 (its towers only).
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
(cd /tmp/b && EDGEVLA_CUDA_NORM_ONE_REDUCTION=1 timeout 250 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest (one exchange) rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
for arm in 0 1; do EDGEVLA_CUDA_NORM_ONE_REDUCTION=$arm timeout 30 $BP/edgevla_bench_cuda_norms --repeat 5 > $R/norms_$arm.out 2>&1; echo "norms $arm rc=$?"; done
python3 - $R <<'PY'
import json, sys
rows = {}
for arm in ('0', '1'):
    for l in open(f"{sys.argv[1]}/norms_{arm}.out"):
        if l.startswith('{'):
            d = json.loads(l); rows.setdefault(f"{d['shape']} rows {d['rows']} parts {d['residual_parts']}", {})[arm] = d
for k, v in rows.items():
    print(k, {a: d['us'] for a, d in v.items()}, 'copy', v['0']['copy_same_bytes_us'])
PY
. $REPO/bench/results/issue9_h200/show.sh
for arm in 1 0 1 0; do [ $SECONDS -gt 430 ] && break
  EDGEVLA_CUDA_NORM_ONE_REDUCTION=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot one-exchange $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
done
for arm in 1 0; do [ $SECONDS -gt 470 ] && break
  EDGEVLA_CUDA_NORM_ONE_REDUCTION=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$arm.out 2> $R/pi0_$arm.err
  echo "pi0.5 one-exchange $arm rc=$?"; show $R/pi0_$arm.out
done
date
cd $REPO/bench
[ $SECONDS -lt 500 ] && { timeout 90 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    v = {k: (x.get('e2e_ms', {}).get('median') if isinstance(x.get('e2e_ms'), dict) else x.get('e2e_ms'),
             x.get('backbone_ms', {}).get('median'), x.get('head_steps_ms', {}).get('median')) for k, x in d.get('variants', {}).items()}
    print('torch_groot views', d.get('views'), v, 'floor', fl.get('floor_ms'), 'head floor', fl.get('head_steps_floor_ms'))
PY
}
date
