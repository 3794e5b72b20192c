#!/bin/bash
# Session 2026-11-26c call 5: the chain GEMM tests; per-shape timing of chain_gemm (plain and
# chained) beside cuBLASLt; Nsight Compute raw stall metrics of the q|k|v chain GEMM.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s6call5.sh $R/; tar czf $OUT/results_s6c5.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
(cd /tmp/b && ctest -R "Chain" -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
$BP/edgevla_bench_cuda_kernels --only gemm --repeat 20 > $R/kernels_gemm.jsonl 2> $R/kernels_gemm.err; echo kernels rc=$?
grep '"gemm"' $R/kernels_gemm.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(d["shape"], "floor", d["weight_floor_us"], "lt", d["cublaslt_us"], "pick", d["blas_pick_us"], "chain", d["chain"])'
timeout 200 ncu --set full --page raw --kernel-name regex:chain_gemm --launch-skip 3 --launch-count 1 $BP/edgevla_bench_cuda_kernels --only gemm --shape qkv --repeat 3 > $R/ncu_chain_raw.txt 2>&1
grep -E "issue_stalled.*ratio|sm__cycles_active.avg |gpc__cycles_elapsed.max|smsp__inst_executed.sum |dram__bytes_read.sum |launch__grid_size|launch__occupancy_limit|sm__warps_active" $R/ncu_chain_raw.txt | awk '$NF+0 > 0.05 || /cycles|bytes|grid|occupancy/' | head -60
date
