#!/bin/bash
# Prepared in run 39 for the next session (~4 min, after call_a.sh, whose suite runs the kernel's
# tests): GR00T's MLP half as one kernel (kernels/wgmma_mlp.cu: ff1 → GELU → ff2 in clusters of
# 12, h shared between the cluster's shared memories by bulk copies), built after run 39's device
# time. Kernel bench `--only mlp` (the two GEMMs plain and chained against the fused kernel, and
# how many of its clusters the device holds at once; GR00T's shape in clusters of 12 and pi0.5's
# GeGLU form in clusters of 8), then GR00T E2E with EDGEVLA_CUDA_WGMMA_MLP=1
# against 0, alternated twice. Predicted (notes "Next: one kernel for each MLP half", "Run 39"):
# fused ~11-12.5 µs against the chained pair's ~16 µs on the critical path; GR00T head −0.4 to
# −0.6 ms (4.8 → ~4.3), if all 8 clusters are resident.
exec > $OUT/run.log 2>&1
R=/tmp/nb; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
timeout 60 /tmp/b/bin/edgevla_bench_cuda_kernels --only mlp > $R/mlp.out 2>&1; grep -h '"mlp_half"' $R/mlp.out; tail -2 $R/mlp.out
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WGMMA_MLP=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_mlp$v.out 2> $R/groot_mlp$v.err
  echo "groot mlp fused=$v"; show $R/groot_mlp$v.out; grep -h "MLP halves" $R/groot_mlp$v.err | head -1
done
date
