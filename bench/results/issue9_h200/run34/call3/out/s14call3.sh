#!/bin/bash
# Run 34 call 3: the warpgroup GEMM templated on its epilogue and chain-capable (its first weight
# tiles load before it waits for the kernel ahead): tests, kernel bench, pi0.5 E2E over GEMM sets,
# k-part caps and chained layers, and a kernel-by-kernel breakdown (ncu) of the head with and
# without it.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run34/call3/s14call3.sh $R/; gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results_s14c3.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 60 $BP/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep "OK \]\|FAILED\|Failure" $R/wgmma_test.log | head -20
timeout 150 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*:CudaPi0Chain*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma test rc=$?"; grep "run \|OK \]\|FAILED\|Failure" $R/pi0_wgmma_test.log | head
timeout 120 $BP/edgevla_bench_cuda_kernels --only gemm > $R/kernels.out 2> $R/kernels.err; echo "kernels rc=$?"
grep '"gemm"' $R/kernels.out | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d['shape'], 'cublaslt', d['cublaslt_us'], 'read', d['read_only_us'], 'wgmma', d['wgmma'])"
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
run() { # name, env...
  local n=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 50 --warmup 10 > $R/pi0_$n.out 2> $R/pi0_$n.err; echo "pi0 $n ($*) rc=$?"; show $R/pi0_$n.out; }
run off EDGEVLA_CUDA_WGMMA=0
run all EDGEVLA_CUDA_WGMMA=all
run all_p4 EDGEVLA_CUDA_WGMMA=all EDGEVLA_CUDA_WGMMA_PARTS=4
run ogd EDGEVLA_CUDA_WGMMA=o,gate_up,down
run all_chain EDGEVLA_CUDA_WGMMA=all EDGEVLA_CUDA_WGMMA_CHAIN=1
run all_chain_p4 EDGEVLA_CUDA_WGMMA=all EDGEVLA_CUDA_WGMMA_CHAIN=1 EDGEVLA_CUDA_WGMMA_PARTS=4
run ogd_chain EDGEVLA_CUDA_WGMMA=o,gate_up,down EDGEVLA_CUDA_WGMMA_CHAIN=1
run off2 EDGEVLA_CUDA_WGMMA=0
date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
for W in 0 all; do
  EDGEVLA_CUDA_WGMMA=$W EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_head_$W.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
  echo "ncu $W rc=$?"
done
python3 bench/kernel_breakdown.py off=$R/ncu_pi0_head_0.csv wgmma=$R/ncu_pi0_head_all.csv --top 20 > $R/breakdown.txt 2>&1
head -80 $R/breakdown.txt
date
