#!/bin/bash
# Run 35 call 6 (the session's last ~4 device minutes): the first ablation of pi0.5's head in the
# chained graph (run35/next/run_next.sh, cut to pi0.5 at one view; no tests built, so it fits).
exec > $OUT/run.log 2>&1
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_CUDA_ABLATION=ON -DEDGEVLA_BUILD_TESTS=OFF > $OUT/build.log 2>&1 || { tail -60 $OUT/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
$E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?; date
for k in none attention norm gate_up down qkv o rope; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 20 --warmup 5 > $OUT/pi0_$k.out 2> /dev/null
  echo "pi0 without $k: $(grep -h '^{' $OUT/pi0_$k.out | python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print('e2e', d['e2e_ms']['median'], 'head', d['action_head_ms']['median'])")"
done
date
