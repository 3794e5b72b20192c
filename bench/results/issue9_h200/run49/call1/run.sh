#!/bin/bash
# Prepared in run 48 for the next session's first call (~7 min): the whole GPU suite at run 48's
# last commit (the attention scratch sized for every bucket; 39/39 of the pi0 and attention tests in
# call 6, the whole suite not yet; GR00T's backbone sized by the same helper after the device time,
# not yet run on a GPU), then both families beside PyTorch in one run. Run 48 call 1
# (run 47's code): pi0.5 10.86 / 14.77 ms against torch.compile + graph 16.15 / 21.92 (1.49x /
# 1.48x), GR00T 7.38 / 8.21 against 9.89 / 10.52. Predicted: 120/120; the same within ±0.1 ms.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 220 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for r in 1; do
  for lf in 2 0; do
    EDGEVLA_CUDA_LAYER_FENCES=$lf EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_lf${lf}_$r.out 2> $R/pi0_lf${lf}_$r.err
    echo "pi0.5 layer fences $lf"; show $R/pi0_lf${lf}_$r.out
  done
done
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot.out 2> $R/groot.err; echo "groot"; show $R/groot.out
cd $REPO/bench
timeout 100 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for f in ("torch_pi0.jsonl", "torch_groot.jsonl"):
    try:
        for l in open(f"{R}/{f}"):
            d = json.loads(l)
            fl = d.get('floor', {})
            print(f, 'views', d['views'], {k: v['e2e_ms']['median'] for k, v in d['variants'].items()},
                  {k: v['backbone_ms']['median'] for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms', fl.get('read_all_weight_bytes_ms')), 'head floor', {k: v for k, v in fl.items() if 'head' in k})
    except OSError as e:
        print(e)
PY
date
