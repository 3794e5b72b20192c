#!/bin/bash
# Run 63, call 3 (~7 min): call 2 again for GR00T only, its event record now external only
# inside a capture (call 2's failed eagerly: cudaErrorIllegalState); the GR00T GPU tests at the
# new code; GR00T alternated twice against the patch reversed; one timeline.
# Predicted: GR00T −0.02 to −0.04 ms E2E.
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
(cd /tmp/b && timeout 270 ctest -L gpu -R '[Gg]root' -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
LIB=/tmp/b/lib/libedgevla_backend_cuda.so
cp $LIB /tmp/new.so
P=bench/results/issue9_h200/run63/call3/pinned_out_count_in_graph.patch
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
  done
done
cp /tmp/new.so $LIB
date
if [ $SECONDS -lt 480 ]; then
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --warmup 10 --timeline 3 --timeline-csv $R/groot_tl > $R/groot_tl.out 2> $R/groot_tl.err
  echo "groot timeline rc=$?"; show_timeline $R/groot_tl.out
fi
date
