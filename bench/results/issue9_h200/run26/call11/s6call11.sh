#!/bin/bash
# Session 2026-11-26c call 11 (final): the whole suite on the GPU host's 16 cores (CPU tests and
# GPU tests) at the final commit; the default engines once more.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r11; mkdir -p $R
finish() { cp $REPO/.repro/s6call11.sh $R/; tar czf $OUT/results_s6c11.tgz -C $R . ; }
trap finish EXIT
date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception" $R/gpu_ctest.log | head
(cd /tmp/b && ctest -LE gpu -j16 -E '^(python_client|mcap_js_conformance)$' --output-on-failure > $R/cpu16_ctest.log 2>&1; echo "cpu16 ctest rc=$?"; tail -4 $R/cpu16_ctest.log)
grep -E "\*\*\*Failed|\*\*\*Exception" $R/cpu16_ctest.log | head
date
for v in pi0 groot; do
  if [ $v = pi0 ]; then a="--checkpoint /tmp/pi05 --views 1,3"; else a="--checkpoint /tmp/groot --views 1,2"; fi
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_$v.txt timeout 100 $BP/edgevla_bench_cuda_$v $a --repeat 50 --warmup 10 > $R/${v}_default.out 2> $R/${v}_default.err
  grep -h '^{' $R/${v}_default.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"]) for d in map(json.loads, sys.stdin)))'
done
date
