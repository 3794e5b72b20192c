#!/bin/bash
# Run 38, call 1 (~8 min): run 37's prepared calls a, c and d in one build.
#  1. GPU suite at run 37's last code (never run: CudaAttention.WideBlocksMatch; the GR00T test
#     opening the backbone LLM on the warpgroup GEMM by EDGEVLA_CUDA_WGMMA_BACKBONE=1).
#  2. pi0.5's prefix attention shapes in the kernel bench (every split, the wide plan, TFLOP/s),
#     then Nsight Compute on the plan's launch and on the wide one (stall reasons).
#  3. pi0.5 E2E with wide blocks wherever the 64-row plan has >= N blocks, now a run-time
#     variable (EDGEVLA_ATTN_WIDE_ROWS): b (never) / w100 (3-view prefix only) / w40 (1 view too),
#     alternated twice. Predicted: 3 views backbone -0.1 to -0.3 ms; 1 view within +-0.1 ms.
#  4. GR00T once (run 37 call 3: 7.38 / 8.09 ms).
exec > $OUT/run.log 2>&1
R=/tmp/r1; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; K=/tmp/b/bin/edgevla_bench_cuda_kernels
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
date
for sh in pi05_prefix_1view pi05_prefix_3view; do
  timeout 60 $K --only attention_shapes --shape $sh --repeat 20 > $R/shape_$sh.out 2> $R/shape_$sh.err
  echo "$sh"; grep -h '^{' $R/shape_$sh.out | cut -c40-220
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for sh in pi05_prefix_1view pi05_prefix_3view; do
  for sp in plan wide; do
    timeout 100 $NCU --kernel-name regex:"attn_" --launch-count 2 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
      --section InstructionStats \
      $K --only attention_shapes --shape $sh --split $sp --repeat 3 > $R/ncu_${sh}_$sp.txt 2>&1
    echo "ncu $sh $sp rc=$?"
    grep -E "  attn_|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Issued Warp|No Eligible|Warp Cycles Per Issued|Executed Ipc A" $R/ncu_${sh}_$sp.txt | head -40
  done
done
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in b w100 w40 b w100 w40; do
  case $v in b) W=0;; w100) W=100;; w40) W=40;; esac
  EDGEVLA_ATTN_WIDE_ROWS=$W EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0 $v"; show $R/pi0_$v.out
done
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot.out 2> $R/groot.err; echo groot; show $R/groot.out
date
