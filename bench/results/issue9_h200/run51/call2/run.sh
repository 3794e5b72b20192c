#!/bin/bash
# Run 51, call 2 (~3 min warm): call 1's prefetches with the kernel spread over 512 KB blocks.
# Call 1 put one block on each range: its requests ran at ~0.3-0.4 TB/s, the side stream's chain
# of prefetch kernels outlasted the pass, and the join at the pass's end waited for it (GR00T's
# backbone +2.1 ms with the tower's, +3.9 ms with the LLM's). Predicted now: the side chain well
# under the pass; GR00T backbone -0.1 to -0.3 ms (tower), -0.05 to -0.25 (LLM), or slower if the
# prefetches delay the GEMMs' own reads.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1; echo "build rc=$?"
grep -q "FAILED" $R/build.log && { grep -A12 "FAILED" $R/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin; E=$BP/edgevla
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 120 ctest -L gpu -R "WeightsReadAhead|L2Prefetch" -j4 --output-on-failure > $R/ctest_prefetch.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_prefetch.log | head)
wait
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for v in "0 0" "1 0" "2 0" "0 16" "0 32" "1 16"; do
    set -- $v; tag=t$1_l$2_$round
    EDGEVLA_CUDA_TOWER_PREFETCH=$1 EDGEVLA_CUDA_LLM_PREFETCH=$2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
    echo "groot tower $1 llm $2 round $round"; show $R/groot_$tag.out
  done
  for t in 0 1 2; do
    EDGEVLA_CUDA_TOWER_PREFETCH=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_t${t}_$round.out 2> $R/pi0_t${t}_$round.err
    echo "pi0.5 tower $t round $round"; show $R/pi0_t${t}_$round.out
  done
  date
done
