#!/bin/bash
# Session 2026-11-26d call 7: the expert attention alone (per split, in a graph) and Nsight Compute's
# full set on its main kernel and its combine.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r7; mkdir -p $R
finish() { cp $REPO/.repro/s7call7.sh $R/; tar czf $OUT/results_s7c7.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
$BP/edgevla_bench_cuda_kernels --only attention --repeat 20 > $R/kernels_attention.jsonl 2> $R/kernels_attention.err; echo rc=$?
cat $R/kernels_attention.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if d["bench"]=="attention": print(d["valid_prefix"], d["splits_asked"], d["us_per_call_in_graph"])'
date
timeout 240 ncu --set full --kernel-name regex:"attn_bf16|attn_combine" --launch-skip 490 --launch-count 2 $BP/edgevla_bench_cuda_kernels --only attention --repeat 2 > $R/ncu_attn_full.txt 2>&1; echo ncu rc=$?
grep -E "attn_|Duration|Elapsed Cycles|SM Frequency|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Dynamic Shared|Memory Throughput|DRAM Throughput|L2 Hit|Compute \(SM\) Throughput|Executed Ipc A|Issue Slots Busy|No Eligible|One or More Eligible|Warp Cycles Per Issued" $R/ncu_attn_full.txt | head -60
timeout 120 ncu --page raw --metrics regex:smsp__average_warp_latency_issue_stalled.*ratio,smsp__warps_issue_stalled.*ratio --kernel-name regex:attn_bf16 --launch-skip 272 --launch-count 1 $BP/edgevla_bench_cuda_kernels --only attention --repeat 2 > $R/ncu_attn_stalls.txt 2>&1
grep -E "stalled" $R/ncu_attn_stalls.txt | awk '$NF+0 > 0.1' | sort -k3 -n -r | head -25
gzip $R/ncu_attn_full.txt
date
