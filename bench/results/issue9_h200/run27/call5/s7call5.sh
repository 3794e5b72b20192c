#!/bin/bash
# Session 2026-11-26d call 5: every GPU test at the session's commit; the GEMM bench with the
# read-only floor beside cuBLASLt per shape.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s7call5.sh $R/; tar czf $OUT/results_s7c5.tgz -C $R . ; }
trap finish EXIT
date; git -C $REPO log --oneline -1 2>/dev/null
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
$BP/edgevla_bench_cuda_kernels --only gemm --repeat 20 > $R/kernels_gemm.jsonl 2> $R/kernels_gemm.err; echo kernels rc=$?
grep '"gemm' $R/kernels_gemm.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if d["bench"]=="gemm": print(d["shape"], "floor", d["weight_floor_us"], "read", d["read_only_us"], "lt", d["cublaslt_us"], "lt/read", d["cublaslt_over_read"], "pick", d["blas_pick_us"])
    else: print(d)'
date
