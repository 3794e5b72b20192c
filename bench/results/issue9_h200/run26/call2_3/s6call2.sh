#!/bin/bash
# Session 2026-11-26c call 2: chain_gemm with every chunk of A in flight at once. The chain
# GEMM test and the engine tests; pi0.5 with the chain on, on without chained launches, off;
# an nsys timeline of one chained and one plain head (kernel increments).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s6call2.sh $R/; tar czf $OUT/results_s6c2.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && ctest -R "Chain|CudaPi0" -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "Failed|FAILED|\*\*\*" $R/gpu_ctest.log | head -20
pi0() { local tag=$1; shift
  env "$@" EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag"; grep -h '^{' $R/pi0_$tag.out | cut -c150-300; }
pi0 chain A=1; pi0 plainlaunch EDGEVLA_CUDA_CHAIN_LAUNCH=0; pi0 blas EDGEVLA_CUDA_CHAIN_GEMM=0; pi0 chain2 A=1
NS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NS"
for tag in chain blas; do
  if [ $tag = blas ]; then X=EDGEVLA_CUDA_CHAIN_GEMM=0; else X=A=1; fi
  env $X EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $NS profile -t cuda,nvtx --cuda-graph-trace=node --capture-range=cudaProfilerApi -o /tmp/ns_$tag -f true $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > $R/nsys_$tag.log 2>&1
  $NS stats -r cuda_gpu_trace -f csv -o /tmp/ns_$tag /tmp/ns_$tag.nsys-rep > /dev/null 2>&1
  ls /tmp/ns_${tag}* ; F=$(ls /tmp/ns_${tag}*gpu_trace*.csv | head -1)
  python3 $REPO/.repro/nsys_increments.py $F $( [ $tag = blas ] && echo rope_kernel || echo chain_gemm ) > $R/increments_$tag.txt 2>&1; head -14 $R/increments_$tag.txt
  gzip -c $F > $R/nsys_trace_$tag.csv.gz
done
date
