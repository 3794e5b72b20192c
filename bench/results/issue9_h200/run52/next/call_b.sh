#!/bin/bash
# Prepared in run 52 for the next session's second call (~8 min; run 51's prepared call, not run in
# run 52, which spent its device time on the persistent-step probe): the whole GPU suite at run 51's
# last commit (run 50's defaults: run 51 took out everything it tried), then both families
# beside PyTorch, the PyTorch baselines run twice (run 50 call 4's compiled figures sat 3-6 % above
# runs 47-49's and run 51's, and pi0.5's 1.5x at three views hangs on that spread), edgevla's once
# before and once after them. Predicted: 120/120; edgevla within ±0.1 ms of run 51 call 1 (pi0.5
# 10.53-10.60 / 14.66-14.75, GR00T 7.08-7.11 / 7.82 ms); each PyTorch figure within ±5 % of its
# other run. The machine's working tree must stay under 64 MiB with .debs carried (run 51: the
# checkout is ~21 MB, .debs 33 MB after libicu-dev was repacked without its static libraries).
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
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0.out 2> $R/pi0.err
echo "pi0.5 (defaults)"; show $R/pi0.out
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot.out 2> $R/groot.err; echo "groot (defaults)"; show $R/groot.out
cd $REPO/bench
for t in 1 2; do
timeout 100 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot_$t.jsonl > /dev/null 2> $R/torch_groot_$t.err
echo "torch groot rc=$?"; date
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0_$t.jsonl > /dev/null 2> $R/torch_pi0_$t.err
echo "torch pi0 rc=$?"; date
done
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for f in ("torch_pi0_1.jsonl", "torch_pi0_2.jsonl", "torch_groot_1.jsonl", "torch_groot_2.jsonl"):
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
cd $REPO
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_after.out 2> $R/pi0_after.err
echo "pi0.5 (defaults, after PyTorch)"; show $R/pi0_after.out
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_after.out 2> $R/groot_after.err
echo "groot (defaults, after PyTorch)"; show $R/groot_after.out
date
