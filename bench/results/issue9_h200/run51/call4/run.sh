#!/bin/bash
# Run 51, call 4 (~7 min cold), a profiling build (-DEDGEVLA_CUDA_ABLATION=ON):
# 1. What GR00T's head pays ahead of its first step for the cross blocks' keys and values (two
#    GEMMs over ~100 MB of weights each, made once a run): EDGEVLA_CUDA_ABLATE=cross_kv against
#    nothing left out, alternated three times. Predicted 0.05-0.07 ms (2 x ~30 us of weight reads
#    plus hand-overs); if so, making them on a side stream block by block during the first step
#    is worth about that.
# 2. Nsight Compute kernel times of GR00T's backbone at one view at today's defaults (run 42's
#    breakdown predates the padded MLP, the k parts and evict-first), for the next session.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
trap 'gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b -DEDGEVLA_CUDA_ABLATION=ON -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1; echo "build rc=$?"
grep -q "FAILED" $R/build.log && { grep -A12 "FAILED" $R/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin; E=$BP/edgevla
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?)
date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2 3; do
  for ab in none cross_kv; do
    EDGEVLA_CUDA_ABLATE=$ab EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_${ab}_$round.out 2> $R/groot_${ab}_$round.err
    echo "groot left out: $ab, round $round"; show $R/groot_${ab}_$round.out
  done
done
date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 150 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/ncu_groot_backbone_v1.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2>&1
echo "ncu groot backbone rc=$?"; date
python3 bench/kernel_breakdown.py groot_backbone_v1=$R/ncu_groot_backbone_v1.csv --top 30 > $R/breakdown_groot_backbone.txt 2>&1
head -45 $R/breakdown_groot_backbone.txt
date
