#!/bin/bash
# Run 43 call 3 (~7 min): the GPU suite with pi0 / pi0.5's k-part cap at 8 (call 2's pick); the
# vision towers' GEMMs at 256 / 768 rows, cuBLASLt against the warpgroup GEMM (its bf16 form in
# 1-4 k slices, its f32 k parts), the MLP's 4304 padded to 4352 for it (the bench's new
# `--only backbone`); Nsight Compute on the SigLIP and GR00T-LLM attention (stall reasons).
# Predicted: cuBLASLt 11-13 µs (qkv), 5-6 (o), 9-12 (fc1 / fc2) at 256 rows as in run 42 call 3;
# the warpgroup GEMM 6-8 µs on qkv in 2 slices (108 blocks, each re-reading 295 KB of A), worse
# where the feature blocks are few (o: 18 blocks).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
trap 'gzip -f $R/*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
(cd /tmp/b && timeout 280 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/ 2>/dev/null
date
timeout 150 $BP/edgevla_bench_cuda_kernels --only backbone --repeat 20 > $R/backbone_gemms.jsonl 2> $R/backbone_gemms.err; echo "backbone gemm bench rc=$?"
python3 - $R/backbone_gemms.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    d = json.loads(l)
    if d.get('bench') != 'gemm': continue
    fl = 2 * d['m'] * d['n'] * d['k']
    w = d['wgmma']
    lt = d['cublaslt_us']
    print(f"{d['shape']:18s} m {d['m']:4d} n {d['n']:5d} k {d['k']:5d}  cuBLASLt {lt:6.2f} µs ({fl/lt/1e6:5.0f} TFLOP/s)  read-only {d['read_only_us']:5.2f}  wgmma {w}")
PY
date
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats"
for shape in siglip_1view groot_llm_1view; do
  timeout 90 $NCU -k regex:attn --launch-skip 10 --launch-count 2 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $shape --repeat 3 > $R/ncu_$shape.txt 2>&1; echo "ncu $shape rc=$?"
  grep -E "attn|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Block Size|Grid Size|Dynamic Shared|Issued Ipc|No Eligible|One or More" $R/ncu_$shape.txt | head -60
done
timeout 60 $BP/edgevla_bench_cuda_kernels --only attention_shapes --repeat 20 > $R/attention_shapes.jsonl 2>&1; echo "attention shapes rc=$?"
grep siglip $R/attention_shapes.jsonl | head -20
date
