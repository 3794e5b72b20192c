#!/bin/bash
# Prepared in run 49 for the next session's first call (~8 min).
# 1. The whole GPU suite at run 49's last commit (the defaults are run 48's code; new since: the
#    warpgroup GEMM's prologue probe, compiled only into profiling builds). Predicted 120/120.
# 2. What a norm done in the next GEMM's prologue would cost (the structural lever named in run
#    49's notes), measured before building it: a -DEDGEVLA_CUDA_ABLATION=ON build, both heads with
#    EDGEVLA_CUDA_ABLATE = none / norm (the norm kernels left out: the upper bound, ~0.96 ms on
#    pi0.5's head and ~0.67 on GR00T's in run 45) / norm,norm_probe (left out, and the GEMMs after
#    them, q|k|v and gate|up (GR00T: q|k|v or cross q, and ff1), read the f32 residual stream in
#    their prologue after the chain's wait, summing each row's squares, as such a norm would),
#    alternated twice; pi0.5 with EDGEVLA_CUDA_LAYER_FENCES=0 so the head's time stands alone.
#    Predicted: norm,norm_probe 0.3-0.6 ms under none on pi0.5's head (the reads cost ~1-1.5 µs
#    of the ~2.7 µs each norm launch costs), 0.2-0.4 on GR00T's. Under 0.2: the design is not worth
#    building.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
(bash .debs/build.sh . /tmp/b > $R/build.log 2>&1; echo "build rc=$?") &
(EDGEVLA_PFX=/tmp/pfxa bash .debs/build.sh . /tmp/ba -DEDGEVLA_BUILD_TESTS=OFF -DEDGEVLA_CUDA_ABLATION=ON > $R/build_a.log 2>&1; echo "build ablation rc=$?") &
wait; date
[ -x /tmp/ba/bin/edgevla ] || { grep -B2 -A8 "error" $R/build_a.log | head -40; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/ba/bin/edgevla; BA=/tmp/ba/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for k in none norm norm,norm_probe; do
    EDGEVLA_CUDA_ABLATE=$k EDGEVLA_CUDA_LAYER_FENCES=0 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BA/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_${k/,/_}_$round.out 2> $R/pi0_${k/,/_}_$round.err
    echo "pi0.5 ablate $k round $round"; show $R/pi0_${k/,/_}_$round.out
    EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BA/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_${k/,/_}_$round.out 2> $R/groot_${k/,/_}_$round.err
    echo "groot ablate $k round $round"; show $R/groot_${k/,/_}_$round.out
  done
done
date
