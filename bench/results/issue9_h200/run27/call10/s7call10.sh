#!/bin/bash
# Session 2026-11-26d call 10: the split attention issuing its share's second key tile at once
# (one load latency for a two-tile share), against the committed kernel in the same run (pi0.5 and
# GR00T); then every GPU test on the new build.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r10; mkdir -p $R
finish() { cp $REPO/.repro/s7call10.sh $R/; tar czf $OUT/results_s7c10.tgz -C $R . ; }
trap finish EXIT
date
mkdir -p /tmp/base && tar cf - --exclude=./.debs --exclude=./.repro . | tar xf - -C /tmp/base
cp .repro/base2/kernels/attention.cu .repro/base2/kernels/ptx.cuh /tmp/base/runtime/backends/cuda/kernels/
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
(/tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init.log 2>&1; /tmp/b/bin/edgevla model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1) &
INIT=$!
bash .debs/build.sh /tmp/base /tmp/b0 > $R/build0.log 2>&1 || { tail -60 $R/build0.log; exit 1; }
. /tmp/edgevla-env.sh
wait $INIT
date
export EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt
for v in b0 b b0 b; do
  /tmp/$v/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > "$R/pi0_$v.out" 2> "$R/pi0_$v.err"
  echo "== pi0 $v rc=$?"; grep '"bench"' "$R/pi0_$v.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'
done
unset EDGEVLA_GEMM_PLAN_FILE
for v in b0 b b0 b; do
  /tmp/$v/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 > "$R/groot_$v.out" 2> "$R/groot_$v.err"
  echo "== groot $v rc=$?"; grep '"bench"' "$R/groot_$v.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   ", {k: (v["median"] if isinstance(v, dict) and "median" in v else v) for k, v in d.items() if k.endswith("_ms") or k == "views"})'
done
date
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
date
