#!/bin/bash
# Prepared in run 41, carried over by run 42 (not run there; ~5 min): with four weight stages ahead of
# the chain's wait (run 41's new default) the memory system is quieter while each kernel ahead runs,
# so the k-part caps measured under eight (run 34 call 5, run 36 call 1: 4 for pi0 / pi0.5, 8 for
# GR00T) may have moved. Each setting alternated twice; heads and E2E. Run-time knobs only, no
# code change: EDGEVLA_CUDA_WGMMA_PARTS (k parts of o / down, GR00T out / ff2) and
# EDGEVLA_WGMMA_AHEAD (stages ahead). Predicted: within ±0.05 ms for pi0.5; GR00T at 4 parts
# within ±0.1 ms of 8.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for parts in 8 4 6; do
    EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_p${parts}_$round.out 2> $R/groot_p${parts}_$round.err
    echo "groot parts=$parts"; show $R/groot_p${parts}_$round.out
  done
  for parts in 4 8 2; do
    EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_p${parts}_$round.out 2> $R/pi0_p${parts}_$round.err
    echo "pi0.5 parts=$parts"; show $R/pi0_p${parts}_$round.out
  done
done
date
