#!/bin/bash
# Run 55, call 3 (~8 min): the patch embedding's k padded 588 -> 640 (EDGEVLA_CUDA_PATCH_PAD, both
# families; at 588 cuBLASLt ran a 17 µs fallback kernel at GR00T's 648 rows) and GR00T's pixel
# unshuffle a (token, channel) a thread (7 µs a view before). The GPU suite; PATCH_PAD 0 / 1
# alternated twice in both families; PyTorch's GR00T and pi0.5 in the same run; GR00T's backbone by
# kernel at two views again.
# Predicted: 126/126; GR00T backbone −0.01 ms (1 view) / −0.015 (2), pi0.5 −0.01 / −0.02; the patch
# GEMM 4-6 µs, unshuffle ~2 µs a view in the breakdown.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_PATCH_PAD=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot PATCH_PAD=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 1 0 1; do
  EDGEVLA_CUDA_PATCH_PAD=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 PATCH_PAD=$v rc=$?"; show $R/pi0_$v.out
done
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for f in ("torch_pi0.jsonl", "torch_groot.jsonl"):
    try:
        for l in open(f"{R}/{f}"):
            d = json.loads(l); fl = d.get('floor', {})
            print(f, 'views', d['views'], {k: (v['e2e_ms']['median'], v['backbone_ms']['median']) for k, v in d['variants'].items()},
                  'floor', fl.get('floor_ms', fl.get('read_all_weight_bytes_ms')), 'head steps floor', fl.get('head_steps_floor_ms'))
    except OSError as e:
        print(e)
PY
cd $REPO
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/ncu_groot_backbone_v2.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 2 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot backbone v2 rc=$?"; date
python3 bench/kernel_breakdown.py edgevla_v2=$R/ncu_groot_backbone_v2.csv --top 40 > $R/breakdown_backbone_v2.txt 2>&1
head -48 $R/breakdown_backbone_v2.txt
date
