#!/bin/bash
# Session 2026-11-26d call 8: rope and GeGLU with two elements a thread at the action expert's
# row counts, against the committed kernels (8 a thread) in the same run; then every GPU test.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r8; mkdir -p $R
finish() { cp $REPO/.repro/s7call8.sh $R/; tar czf $OUT/results_s7c8.tgz -C $R . ; }
trap finish EXIT
date
mkdir -p /tmp/base && tar cf - --exclude=./.debs --exclude=./.repro . | tar xf - -C /tmp/base
cp .repro/base/elementwise.cu /tmp/base/runtime/backends/cuda/kernels/elementwise.cu
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
bash .debs/build.sh /tmp/base /tmp/b0 > $R/build0.log 2>&1 || { tail -60 $R/build0.log; exit 1; }
date
/tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init.log 2>&1 || { tail $R/init.log; exit 1; }
date
export EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt
for v in base new base new; do
  B=/tmp/b; [ $v = base ] && B=/tmp/b0
  LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH $B/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > "$R/pi0_$v.out" 2> "$R/pi0_$v.err"
  echo "== $v rc=$?"; grep '"bench"' "$R/pi0_$v.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'
done
date
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
date
