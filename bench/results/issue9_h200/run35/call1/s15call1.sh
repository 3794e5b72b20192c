#!/bin/bash
# Run 35 call 1: the GPU suite at run 34's last commits (not yet run on a GPU), where each action
# head's device time goes kernel by kernel now that both run on the warpgroup GEMM (ncu
# durations, plain launches), and Nsight Compute's full set on the warpgroup GEMM's forms at
# pi0.5's gate|up beside cuBLASLt (run 34's prepared probe: why the GeGLU epilogue costs ~3 µs).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results_s15c1.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
timeout 60 $BP/edgevla_bench_cuda_kernels --only gemm --shape gate_up > $R/kernels.out 2>&1; grep '"gemm"' $R/kernels.out
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 150 $NCU --nvtx-include "edgevla.pi0.action_head/" --log-file $R/ncu_pi0_head.csv $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu pi0 rc=$?"; date
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 150 $NCU --nvtx-include "edgevla.groot.action_head/" --log-file $R/ncu_groot_head.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot rc=$?"; date
python3 bench/kernel_breakdown.py pi0_head=$R/ncu_pi0_head.csv groot_head=$R/ncu_groot_head.csv --top 30 > $R/breakdown.txt 2>&1
cat $R/breakdown.txt
timeout 200 ncu --set full --kernel-name regex:"wgmma_gemm_kernel|nvjet" --launch-skip 20 --launch-count 12 \
  --csv --page details --log-file $R/ncu_gate_up_full.csv $BP/edgevla_bench_cuda_kernels --only gemm --shape gate_up > /dev/null 2>&1
echo "ncu full rc=$?"; date
python3 - $R/ncu_gate_up_full.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]
want = ("Duration", "DRAM Throughput", "Registers Per Thread", "Achieved Occupancy", "Stall", "Memory Throughput", "L2 Hit", "Elapsed Cycles", "Warp Cycles Per Issued")
ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
ii = head.index("ID") if "ID" in head else None
for r in rows[1:]:
    if any(w in r[mi] for w in want):
        print(r[ii] if ii is not None else "", r[ki][:50], "|", r[mi], "|", r[vi])
PY
date
