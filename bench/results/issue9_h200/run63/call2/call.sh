#!/bin/bash
# Run 63, call 2 (~9 min): the actions copied out through pinned memory in one transfer (GR00T:
# with the non-finite count behind them) and GR00T's pixel count inside the backbone's graph,
# against the same build without them (the backend plugin rebuilt with the patch reversed and
# swapped in), alternated twice; the GPU suite at the new code; one timeline.
# Predicted from call 1's timeline: GR00T −0.02 to −0.04 ms E2E (the staged copy's ~15-20 µs
# and the prelude's memset / count / copy / record enqueues), pi0.5 −0.01 to −0.03.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; gzip -f $R/*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
LIB=/tmp/b/lib/libedgevla_backend_cuda.so
cp $LIB /tmp/new.so
P=bench/results/issue9_h200/run63/call2/pinned_out_count_in_graph.patch
git apply -R $P && cmake --build /tmp/b --target edgevla_backend_cuda > $R/build_old.log 2>&1; echo "old build rc=$?"; tail -3 $R/build_old.log
cp $LIB /tmp/old.so
git apply $P
date
. $REPO/bench/results/issue9_h200/show.sh
for i in 0 1; do
  for arm in new old; do
    cp /tmp/$arm.so $LIB
    EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_${arm}_$i.out 2> $R/groot_${arm}_$i.err
    echo "groot $arm $i rc=$?"; show $R/groot_${arm}_$i.out
    EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_${arm}_$i.out 2> $R/pi0_${arm}_$i.err
    echo "pi0.5 $arm $i rc=$?"; show $R/pi0_${arm}_$i.out
  done
done
cp /tmp/new.so $LIB
date
if [ $SECONDS -lt 480 ]; then
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --warmup 10 --timeline 3 --timeline-csv $R/groot_tl > $R/groot_tl.out 2> $R/groot_tl.err
  echo "groot timeline rc=$?"; show_timeline $R/groot_tl.out
fi
if [ $SECONDS -lt 520 ]; then
  timeout 70 python3 $REPO/bench/torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.json > $R/torch_groot.log 2>&1
  echo "torch groot rc=$?"; tail -4 $R/torch_groot.log
fi
date
