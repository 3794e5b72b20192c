#!/bin/bash
# Session 2026-11-26f call 7 (final): every GPU test at the final code; the default engines
# beside PyTorch in the same run, pi0.5 and GR00T.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r7; mkdir -p $R
finish() { cp $REPO/.repro/s9call7.sh $R/; tar czf $OUT/results_s9c7.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
export CUDAARCHS=90; rm -rf /tmp/b /tmp/b0; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed" $R/gpu_ctest.log | head
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag"; grep -h '^{' $R/pi0_$tag.out | cut -c150-330; }
groot() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
  echo "groot $tag"; grep -h '^{' $R/groot_$tag.out | cut -c150-330; }
pi0 default A=1; groot default A=1
cd $REPO/bench
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
cd $REPO
pi0 again A=1; groot again A=1
python3 - $R <<'PY'
import json, sys, glob
R = sys.argv[1]
for f in ["torch_pi0.jsonl", "torch_groot.jsonl"]:
    try:
        for l in open(f"{R}/{f}"):
            d = json.loads(l)
            print(f, {k: v for k, v in d.items() if k in ("variant", "views", "e2e_ms", "floor_ms", "stage")})
    except OSError as e:
        print(e)
PY
date
