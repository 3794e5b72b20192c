#!/bin/bash
# Run 52, call 9 (~6 min cold): the k walk rotated per feature block, in the probe and in the engine.
# Call 8: with the epilogue's fields by value the persistent step took 1.65 ms (chain 1.01); its GEMM
# tiles' k loops ran ~0.27-0.32 us a k step with or without weights: every tile of an operation
# reads the same 7 KB box of A at the same moment (96 blocks on the same L2 lines). Here:
# 1. The probe with each tile walking its k blocks from (feature block mod count), wrapping.
# 2. The same in the engine's warpgroup GEMM (EDGEVLA_WGMMA_ROTATE_K=1, new, default 0): the whole
#    GPU suite with it on (tolerances unchanged), then both heads 0 / 1 alternated twice.
# Predicted: probe k loops -30 to -60 %; heads -0.1 to -0.4 ms if the chain's GEMMs share the
# hot spot (GR00T ff1 96 blocks x 24 k steps, pi0.5 gate|up), nothing if not.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r9; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1; echo "build rc=$?"
[ -x /tmp/b/bin/edgevla ] || { grep -B2 -A12 "error" $R/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
BP=/tmp/b/bin; E=$BP/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
timeout 60 $BP/edgevla_bench_cuda_persistent --repeat 20 --rounds 2 > $R/probe.out 2> $R/probe.err; echo "probe rc=$?"
grep -v '"bench"' $R/probe.out
grep '"round": 1' $R/probe.out | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print(d['form'], d['us_per_step'], d.get('vs_chain'))"
(cd /tmp/b && EDGEVLA_WGMMA_ROTATE_K=1 timeout 200 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu_rotate.log 2>&1; echo "ctest (rotate) rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu_rotate.log | head -20)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for rk in 0 1; do
    EDGEVLA_WGMMA_ROTATE_K=$rk EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_r${rk}_$round.out 2> $R/groot_r${rk}_$round.err
    echo "groot rotate_k $rk round $round"; show $R/groot_r${rk}_$round.out
    EDGEVLA_WGMMA_ROTATE_K=$rk EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_r${rk}_$round.out 2> $R/pi0_r${rk}_$round.err
    echo "pi0.5 rotate_k $rk round $round"; show $R/pi0_r${rk}_$round.out
  done
done
date
