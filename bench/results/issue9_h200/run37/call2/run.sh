#!/bin/bash
# Run 37 call 2: GR00T's step edges (action encoder before the DiT; output projection, decoder and
# Euler update after it) on the warpgroup GEMM, in the chain, with SiLU / ReLU / the position
# table / the k parts' sum in epilogues and one step-end kernel (was ~13 cuBLASLt GEMMs and small
# kernels a step outside the chain; run 36 call 3 measured them at 0.24 ms a head).
# The GPU suite first, then the A/B in one binary, alternated twice (1 and 2 views):
#   wg    default (edges on the warpgroup GEMM)
#   blas  EDGEVLA_CUDA_WGMMA=qkv,q,out,ff1,ff2 (the edges on cuBLASLt as before)
# Predicted: head −0.08 to −0.15 ms (4.76 → ~4.65 ms at 1 view).
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 300 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
grep -h -E "silu|relu|addend|step end|warpgroup vs blas" $R/ctest_gpu.log | head -40
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in wg blas wg blas; do
  if [ $v = blas ]; then export EDGEVLA_CUDA_WGMMA=qkv,q,out,ff1,ff2; else unset EDGEVLA_CUDA_WGMMA; fi
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot $v"; show $R/groot_$v.out
done
unset EDGEVLA_CUDA_WGMMA
grep -h "warpgroup GEMM for" $R/groot_wg.err $R/groot_blas.err | head -2
date
