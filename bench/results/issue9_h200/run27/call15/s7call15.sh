#!/bin/bash
# Session 2026-11-26d call 15 (final): every GPU test at the final commit (k split at most 4);
# the default engines once more.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r15; mkdir -p $R
finish() { cp $REPO/.repro/s7call15.sh $R/; tar czf $OUT/results_s7c15.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed" $R/gpu_ctest.log | head
for v in pi0 groot; do
  if [ $v = pi0 ]; then a="--checkpoint /tmp/pi05 --views 1,3"; else a="--checkpoint /tmp/groot --views 1,2"; fi
  timeout 100 $BP/edgevla_bench_cuda_$v $a --repeat 50 --warmup 10 > $R/${v}_default.out 2> $R/${v}_default.err
  grep -h '^{' $R/${v}_default.out | python3 -c '
import json,sys
print("'$v' " + "  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))'
done
date
