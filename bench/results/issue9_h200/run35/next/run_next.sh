#!/bin/bash
# Prepared in run 35 for the next session's first device call (~5 min): what each kernel of the
# action heads costs inside the chained graph, measured by leaving it out (a build with
# -DEDGEVLA_CUDA_ABLATION=ON, EDGEVLA_CUDA_ABLATE=<kernels>; outputs wrong, timings only). Run 35
# shortened the GeGLU epilogue by ~3 µs in the kernel bench and the pi0.5 head moved 0.05 ms, not
# the 0.5 predicted from kernel durations: the chain hides some kernels and not others. This
# says which, so that the next change is aimed at the kernels on the chain's critical path.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rn; mkdir -p $R
trap 'tar czf $OUT/results_next.tgz -C $R .' EXIT
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_CUDA_ABLATION=ON > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait
head_ms() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for k in none norm qkv rope attention o gate_up down attention,o norm,rope qkv,o,gate_up,down; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 30 --warmup 5 > $R/pi0_$k.out 2> $R/pi0_$k.err
  echo "pi0 without $k"; head_ms $R/pi0_$k.out
done
for k in none norm qkv attention out ff1 ff2 out,ff2 qkv,out,ff1,ff2; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 30 --warmup 5 > $R/groot_$k.out 2> $R/groot_$k.err
  echo "groot without $k"; head_ms $R/groot_$k.out
done
