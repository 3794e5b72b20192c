#!/bin/bash
# Session 2026-11-26c call 3: why chain_gemm is slower than cuBLASLt when launched plainly:
# Nsight Compute details of the four chained GEMMs of one layer (plain launches), and of the
# cuBLASLt GEMMs of one layer.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s6call3.sh $R/; tar czf $OUT/results_s6c3.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1
date
NCU="ncu --graph-profiling node --profile-from-start off --set full"
EDGEVLA_CUDA_CHAIN_LAUNCH=0 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 200 $NCU --kernel-name regex:chain_gemm --launch-count 4 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 1 --warmup 1 --profile-last 1 > $R/ncu_chain_details.txt 2>&1
echo chain rc=$?
EDGEVLA_CUDA_CHAIN_GEMM=0 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 200 $NCU --kernel-name regex:nvjet --launch-skip 2 --launch-count 4 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 1 --warmup 1 --profile-last 1 > $R/ncu_blas_details.txt 2>&1
echo blas rc=$?
grep -E "chain_gemm_kernel|nvjet|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Dynamic Shared|Grid Size|Block Size" $R/ncu_*_details.txt | head -80
date
