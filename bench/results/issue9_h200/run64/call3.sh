#!/bin/bash
# Run 64, call 3 (call 2 again, the whole GPU suite, after the post norm's fix; PyTorch's pi0.5 left
# out: call 2 ran it). Call 2: the vision towers' residual stream in bf16 (EDGEVLA_CUDA_TOWER_STREAM=1, new)
# against f32 (the default), GR00T alternated three times and pi0.5 twice; the kernel test of the
# typed norms and both families' suites with the knob on; PyTorch's pi0.5 beside (not run since
# run 62). Predicted: −2 to −3 µs a tower layer (fc2's bf16 beta-add 15.1 vs 17.4 µs f32 at 648
# rows, o's alike, the norms reading half the bytes): GR00T −0.05 to −0.1 ms at two views, −0.02
# to −0.04 at one (its 324 rows take k parts: only the norms gain); pi0.5 −0.03 to −0.08.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure  > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for i in 0 1 2; do
  for t in 0 1; do
    EDGEVLA_CUDA_TOWER_STREAM=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_t${t}_$i.out 2> $R/groot_t${t}_$i.err
    echo "groot tower_stream=$t $i rc=$?"; show $R/groot_t${t}_$i.out
  done
done
for i in 2; do
  for t in 0 1; do
    EDGEVLA_CUDA_TOWER_STREAM=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_t${t}_$i.out 2> $R/pi0_t${t}_$i.err
    echo "pi0.5 tower_stream=$t $i rc=$?"; show $R/pi0_t${t}_$i.out
  done
done
date
date
