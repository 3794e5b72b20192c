#!/bin/bash
# Prepared in run 62 for the next session's first call (~8 min, not yet run): where an end-to-end
# chunk leaves the GPU idle, from CUPTI's records (the benches' new --timeline; the machine has no
# Nsight Systems). Run 62 found GR00T's two views at 1.47-1.48x torch.compile + graph, ~0.1 ms
# short, with E2E (7.11) ≈ backbone alone (3.13) + the head's steps alone (3.85) + its
# once-a-chunk part (0.13-0.15 ms, of which ~0.05 is the cross keys|values' weight reads): the
# timeline says how much of those 7.11 ms the device is idle and where (between the stages, in
# the once-a-chunk part, inside the chains). Untraced runs beside it give the recording's cost.
# Predicted: GR00T busy 6.8-7.0 of 7.1 ms, the largest gaps at the backbone -> head hand-over
# and after the head's last step (copy-out), 20-60 µs each; pi0.5 alike.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; gzip -f $R/*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
# CUPTI: the toolkit's, else the one PyTorch's wheels carry (headers and library side by side).
CUPTI_ARGS=()
if ! ls /usr/local/cuda/extras/CUPTI/include/cupti.h /usr/local/cuda/include/cupti.h > /dev/null 2>&1; then
  H=$(find / -name cupti.h -not -path "/proc/*" 2>/dev/null | head -1)
  L=$(find / -name "libcupti.so*" -not -path "/proc/*" 2>/dev/null | head -1)
  echo "cupti: header ${H:-none}, library ${L:-none}"
  [ -n "$H" ] && [ -n "$L" ] && CUPTI_ARGS=(-DCUDAToolkit_CUPTI_INCLUDE_DIR=$(dirname $H) -DCUDA_cupti_LIBRARY=$L)
fi
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b "${CUPTI_ARGS[@]}" > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
grep -i "cupti" $R/build.log | head -3; grep -i "cupti" /tmp/b/CMakeCache.txt | head -3
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for i in 0 1; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 10 > $R/groot_$i.out 2> $R/groot_$i.err
  echo "groot $i rc=$?"; show $R/groot_$i.out
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --warmup 10 --timeline 5 --timeline-csv $R/groot_tl$i > $R/groot_tl$i.out 2> $R/groot_tl$i.err
  echo "groot timeline $i rc=$?"; tail -2 $R/groot_tl$i.err; show_timeline $R/groot_tl$i.out
done
[ $SECONDS -lt 470 ] && for i in 0; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0_$i.out 2> $R/pi0_$i.err
  echo "pi0.5 $i rc=$?"; show $R/pi0_$i.out
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --warmup 10 --timeline 5 --timeline-csv $R/pi0_tl$i > $R/pi0_tl$i.out 2> $R/pi0_tl$i.err
  echo "pi0.5 timeline $i rc=$?"; tail -2 $R/pi0_tl$i.err; show_timeline $R/pi0_tl$i.out
done
date
