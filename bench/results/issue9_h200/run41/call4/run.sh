#!/bin/bash
# Run 41 call 4: the norm epilogue without clusters (each feature block's k parts in scratch, the
# last part to arrive adds them). Its kernel test (both forms), the warpgroup GEMM's own test, the
# pi0 / pi0.5 engine tests of the warpgroup GEMM; then pi0.5 alternated: default, k parts form,
# clusters form, twice.
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -80; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
date
timeout 120 /tmp/b/bin/cuda_wgmma_norm_test > $R/norm_test.log 2>&1; echo "norm test rc=$?"; grep -E "differ|OK|FAILED|Failure|Expected|Which|error" $R/norm_test.log | head -60
timeout 120 /tmp/b/bin/cuda_wgmma_gemm_test > $R/gemm_test.log 2>&1; echo "gemm test rc=$?"; grep -E "PASSED|FAILED" $R/gemm_test.log | head
timeout 240 /tmp/b/bin/cuda_pi0_test --gtest_filter='CudaPi0Wgmma.*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 engine wgmma tests rc=$?"; grep -E "OK \]|FAILED|Failure|norms in" $R/pi0_wgmma_test.log | head -20
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for round in 1 2; do
  for v in 0 1 cluster; do
    EDGEVLA_CUDA_GEMM_NORM=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_n${v}_$round.out 2> $R/pi0_n${v}_$round.err
    echo "pi0.5 gemm norm=$v rc=$?"; show $R/pi0_n${v}_$round.out
  done
done
date
