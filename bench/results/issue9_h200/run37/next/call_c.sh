#!/bin/bash
# Prepared in run 37 (~4 min): where pi0.5's prefix attention in the backbone loses its time.
# Run 30's breakdown: attn_bf16<256, 32, 2> 27.1 µs a layer at 1 view (1.7 GFLOP: 63 TFLOP/s),
# 48.6 µs at 3 views (7.7 GFLOP: 158 TFLOP/s). First the kernel bench's own timings of both
# shapes (every split), then Nsight Compute on the plan's launches (the attention and its combine)
# with the sections that say what limits it: speed of light, compute and memory workload, warp
# state (stall reasons), scheduler, occupancy, instruction mix.
exec > $OUT/run.log 2>&1
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
for sh in pi05_prefix_1view pi05_prefix_3view; do
  timeout 60 $K --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2> $R/shape_$sh.err
  echo "$sh"; grep -h '^{' $R/shape_$sh.out | cut -c1-200
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for sh in pi05_prefix_1view pi05_prefix_3view; do
  timeout 150 $NCU --kernel-name regex:"attn_(bf16|combine)" --launch-count 2 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --section InstructionStats \
    $K --only attention_shapes --shape $sh --repeat 3 > $R/ncu_$sh.txt 2>&1
  echo "ncu $sh rc=$?"
  grep -E "attn_|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Shared Memory Config|Block Limit|Issued Warp|No Eligible|Stall|Warp Cycles Per Issued|Executed Ipc" $R/ncu_$sh.txt | head -60
done
date
