#!/bin/bash
# Run 45 call 5 (~5 min, the session's last device minutes): the vision towers' MLP padded with
# zeros from 4304 to 4352 (VisionTower::mlp_width, default on; EDGEVLA_CUDA_TOWER_MLP_PAD=0 off).
# Call 4's kernel bench: cuBLASLt's fc2 at k 4352 takes 10.35 µs against 11.80 at k 4304 (324
# rows), and 4352 splits into k parts of 64-multiples (4304 cannot: Blas::k_parts refuses), which
# the backbones' residual GEMMs use up to 512 rows. Predicted: GR00T backbone −0.04 to −0.13 ms at
# one view, pi0.5's −0.01 to −0.05 (256 rows), three views ±0.03 (no parts above 512 rows).
# 1. the whole GPU suite (its new CudaPi0Tower.AnMlpPaddedWithZerosGivesTheSameResults);
# 2. both families with the pad on / off, alternated twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/re; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 220 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
grep -h "tower MLP" /tmp/b/Testing/Temporary/LastTest.log | head -2
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for p in 1 0; do
    v=""; [ $p = 0 ] && v=0
    env ${v:+EDGEVLA_CUDA_TOWER_MLP_PAD=0} EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_mlppad${p}_$round.out 2> $R/groot_mlppad${p}_$round.err
    echo "groot tower MLP pad $p"; show $R/groot_mlppad${p}_$round.out
    env ${v:+EDGEVLA_CUDA_TOWER_MLP_PAD=0} EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_mlppad${p}_$round.out 2> $R/pi0_mlppad${p}_$round.err
    echo "pi0.5 tower MLP pad $p"; show $R/pi0_mlppad${p}_$round.out
  done
done
date
