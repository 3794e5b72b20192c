#!/bin/bash
# Run 37 call 5 (the session's last device minutes): the warpgroup GEMM with two to four row tiles
# a block (up to 224 rows, more in blocks along z), and GR00T's backbone LLM on it (q|k|v, o in k
# parts, gate|up, down in k parts), its layers chained. GPU suite first, then the A/B in one binary,
# alternated twice (1 and 2 views): default against EDGEVLA_CUDA_WGMMA_BACKBONE=0 (cuBLASLt, as
# before); then pi0.5 once (its heads' one-tile kernels restructured: expected unchanged).
# Predicted: GR00T backbone −0.1 to −0.25 ms (o and down fill the device in k parts and the chain
# hides each GEMM's ramp; q|k|v (64 blocks) and gate|up (192 blocks, 1.45 waves) gain little).
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 210 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in wg blas wg blas; do
  if [ $v = blas ]; then export EDGEVLA_CUDA_WGMMA_BACKBONE=0; else unset EDGEVLA_CUDA_WGMMA_BACKBONE; fi
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot $v"; show $R/groot_$v.out
done
unset EDGEVLA_CUDA_WGMMA_BACKBONE
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0.out 2> $R/pi0.err; echo pi0; show $R/pi0.out
date
