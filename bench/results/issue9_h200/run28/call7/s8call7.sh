#!/bin/bash
# Session 2026-11-26e call 7: the final code commit (two key groups only where the device's
# shared memory allows): every GPU test, and the two benches once.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r7; mkdir -p $R
finish() { cp $REPO/.repro/s8call7.sh $R/; tar czf $OUT/results_s8c7.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; rm -rf /tmp/b; date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
( $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1 ) &
(cd /tmp/b && timeout 400 ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu tests rc=$?"; grep -E "tests passed|Failed" $R/gpu_ctest.log; tail -3 $R/gpu_ctest.log)
wait; date
/tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0.out 2> $R/pi0.err
grep -h '"bench"' $R/pi0.out | python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f bb %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"], d["backbone_ms"]["median"]) for d in map(json.loads, sys.stdin)))'
date
