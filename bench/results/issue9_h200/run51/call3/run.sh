#!/bin/bash
# Run 51, call 3 (~4 min cold): the backbones' residual GEMMs (the towers' o and fc2, the LLMs' o
# and down) in k parts up to 1024 rows instead of 512 (EDGEVLA_CUDA_BACKBONE_PARTS_ROWS, new; Blas
# still times 1, 2 and 4 parts per shape and keeps a split only if it wins by 3 %). GR00T's tower
# at two views runs 648 rows, where o and fc2 as beta-add GEMMs fill 54 tiles of 128 x 128 on 132
# multiprocessors. Alternated three times (GR00T) and twice (pi0.5, whose three-view tower (768
# rows) and prefix (968) run 30 call 5 measured slower in parts). Predicted: GR00T 2 views backbone
# -0.03 to -0.1 ms, 1 view unchanged; pi0.5 3 views +0.05 to +0.13 (as run 30).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1; echo "build rc=$?"
grep -q "FAILED" $R/build.log && { grep -A12 "FAILED" $R/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin; E=$BP/edgevla
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2 3; do
  for rows in 512 1024; do
    EDGEVLA_CUDA_BACKBONE_PARTS_ROWS=$rows EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_r${rows}_$round.out 2> $R/groot_r${rows}_$round.err
    echo "groot parts rows $rows round $round"; show $R/groot_r${rows}_$round.out
  done
done
for round in 1 2; do
  for rows in 512 1024; do
    EDGEVLA_CUDA_BACKBONE_PARTS_ROWS=$rows EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_r${rows}_$round.out 2> $R/pi0_r${rows}_$round.err
    echo "pi0.5 parts rows $rows round $round"; show $R/pi0_r${rows}_$round.out
  done
done
date
