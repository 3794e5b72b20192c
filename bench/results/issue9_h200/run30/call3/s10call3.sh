#!/bin/bash
# Session 2026-11-26g (run 30) call 3: the expert's down projection applying the GeGLU itself
# (chain_gemm over the gate|up rows; EDGEVLA_CUDA_DOWN_GEGLU=0 runs the GeGLU kernel and the
# down GEMM on Blas): every GPU test; pi0.5 E2E alternated on / off twice; PyTorch in the same run.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
finish() { cp $REPO/.repro/s10call3.sh $R/; tar czf $OUT/results_s10c3.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/gpu_ctest.log | head
grep -h "down+geglu vs separate\|chain_gemm geglu" $R/gpu_ctest.log | head -12
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag"; grep -h '^{' $R/pi0_$tag.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d['action_head_ms']['median'])"; }
pi0 on1 A=1; pi0 off1 EDGEVLA_CUDA_DOWN_GEGLU=0; pi0 on2 A=1; pi0 off2 EDGEVLA_CUDA_DOWN_GEGLU=0
grep -h "GeGLU" $R/pi0_on1.err | head -2
date
cd $REPO/bench
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants eager,graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
cd $REPO
pi0 on3 A=1; pi0 off3 EDGEVLA_CUDA_DOWN_GEGLU=0
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for l in open(f"{R}/torch_pi0.jsonl"):
    d = json.loads(l)
    print('torch views', d['views'], {k: v['e2e_ms']['median'] for k, v in d['variants'].items()}, 'floor', d.get('floor', {}).get('floor_ms'), 'head floor', d.get('floor', {}).get('head_weight_read_floor_ms'))
PY
date
