#!/bin/bash
# Prepared in run 34 for the next session's first device call (~4 min): why the warpgroup GEMM's
# GeGLU epilogue costs ~3 µs over its plain form in the kernel bench (9.9 against 6.7 µs at
# pi0.5's gate|up, run 34 call 2), and RoPE's epilogue 0.45 ms a head (call 6). Nsight Compute on
# the kernel bench's gate_up shape: each warpgroup form's duration, DRAM throughput, and where
# its warps stall, beside cuBLASLt's kernel.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rn; mkdir -p $R
trap 'tar czf $OUT/results_next.tgz -C $R .' EXIT
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
timeout 60 $BP/edgevla_bench_cuda_kernels --only gemm --shape gate_up > $R/kernels.out 2>&1; grep '"gemm"' $R/kernels.out
timeout 300 ncu --set full --kernel-name regex:"wgmma_gemm_kernel|nvjet" --launch-skip 20 --launch-count 12 \
  --csv --page details --log-file $R/ncu_gate_up.csv $BP/edgevla_bench_cuda_kernels --only gemm --shape gate_up > /dev/null 2>&1
echo "ncu rc=$?"
python3 - $R/ncu_gate_up.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]
want = ("Duration", "DRAM Throughput", "Registers Per Thread", "Achieved Occupancy", "Stall")
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
seen = set()
for r in rows[1:]:
    if any(w in r[mi] for w in want) and (r[ki][:60], r[mi]) not in seen:
        seen.add((r[ki][:60], r[mi]))
        print(r[ki][:60], "|", r[mi], "|", r[vi])
PY
