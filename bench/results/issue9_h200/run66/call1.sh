#!/bin/bash
# Run 66, call 1 (~8.5 min cold): the GPU suite at d5e9224 (its padded-MLP test's checkpoint now
# through GeneratedDirs: not yet run on a GPU), nothing left under /tmp/edgevla-gpu-*; both
# families' engines once (no PyTorch here: calls 2-3 run it, with max-autotune); both CUDA launch
# files recorded 12 s and reported (run65/next/call_c.sh's part).
# Predicted: suite 146/146, 0 left; GR00T 6.48-6.50 / 7.09-7.12 ms; pi0.5 10.45-10.47 /
# 14.47-14.58; camera -> actuation p50 GR00T ~8.5-9.5 ms, pi0.5 ~13-14.
exec > $OUT/run.log 2>&1
REPO=$PWD; R=$OUT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 260 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
ls -d /tmp/edgevla-gpu-* 2>/dev/null | head -5 | sed "s/^/left behind: /"; echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
wait; date
. $REPO/bench/results/issue9_h200/show.sh
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone 1 > $R/groot.out 2> $R/groot.err
echo "groot rc=$?"; show $R/groot.out
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0.out 2> $R/pi0.err
echo "pi0.5 rc=$?"; show $R/pi0.out
cp /tmp/plans_*.txt $R/ 2>/dev/null
date
rm -rf /tmp/run_pi05 /tmp/run_groot
EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=/tmp/run_pi05 timeout 70 $E launch launch/pi05_cuda.yaml --duration 12 > $R/pi05_cuda.launch.txt 2>&1
echo "pi05 launch rc=$?"
$E bag report /tmp/run_pi05/pi05_cuda.mcap > $R/pi05_cuda.report.txt 2>&1
EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=/tmp/run_groot timeout 70 $E launch launch/groot_n16_cuda.yaml --duration 12 > $R/groot_n16_cuda.launch.txt 2>&1
echo "groot launch rc=$?"
$E bag report /tmp/run_groot/groot_n16_cuda.mcap > $R/groot_n16_cuda.report.txt 2>&1
grep -E "camera -> actuation|framework overhead|compute" $R/*.report.txt; ls /tmp/run_pi05 /tmp/run_groot; date
