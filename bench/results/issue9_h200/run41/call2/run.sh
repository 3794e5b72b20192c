#!/bin/bash
# Run 41 call 2: the norm after o and down inside their GEMMs (kNorm epilogue,
# EDGEVLA_CUDA_GEMM_NORM=1). Its kernel test and the pi0 / pi0.5 engine tests first, then pi0.5's
# head and E2E alternated against the default (k parts + norm kernels), twice.
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -80; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
date
timeout 120 /tmp/b/bin/cuda_wgmma_norm_test > $R/norm_test.log 2>&1; echo "norm test rc=$?"; grep -E "differ|OK|FAILED|Failure|Expected|Which|error" $R/norm_test.log | head -40
timeout 200 /tmp/b/bin/cuda_pi0_test --gtest_filter='CudaPi0Wgmma.TheNorms*' > $R/pi0_norm_test.log 2>&1; echo "pi0 engine norm test rc=$?"; grep -E "^\[|OK|FAILED|Failure|rel-L2" $R/pi0_norm_test.log | head -20
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 0 1 0 1; do
  EDGEVLA_CUDA_GEMM_NORM=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_n$v.out 2> $R/pi0_n$v.err
  echo "pi0.5 gemm norm=$v rc=$?"; show $R/pi0_n$v.out; grep -i "GEMM_NORM" $R/pi0_n$v.err | head -2
done
date
