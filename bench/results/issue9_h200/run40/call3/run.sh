#!/bin/bash
# Run 40 call 3: the split attention's shares merged inside a cluster (AttentionArgs::cluster,
# EDGEVLA_ATTN_CLUSTER, on by default in this build) instead of partials in scratch + attn_combine.
#  1. The GPU suite (new: CudaAttention.ClusterSharesMatchTheCombine, bit for bit against the
#     combine; every split call of the other tests now takes the cluster form on this device).
#  2. Kernel bench, the expert's attention: each split count with the combine and with clusters.
#  3. pi0.5 E2E with EDGEVLA_ATTN_CLUSTER=1 against 0, alternated twice.
# Predicted: attn_combine took 3.9 µs a call (run 34's breakdown) on the critical path after the
# attention; the merge in the cluster ~1 µs and no partials written to L2: −2 to −3 µs a call,
# pi0.5 head −0.35 to −0.55 ms (180 calls); GR00T unchanged (its attentions are not split).
exec > $OUT/run.log 2>&1
R=/tmp/nc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 120 /tmp/b/bin/cuda_attention_forms_test --gtest_filter='*Cluster*' > $R/cluster_test.log 2>&1; echo "cluster test rc=$?"; grep -E "merges|differ|FAILED|PASSED|Failure" $R/cluster_test.log | head -30
(cd /tmp/b && timeout 260 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
timeout 60 /tmp/b/bin/edgevla_bench_cuda_kernels --only attention --repeat 20 > $R/expert_attention.out 2>&1
grep -h '"bench": "attention"' $R/expert_attention.out | cut -c1-260
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in 0 1 0 1; do
  EDGEVLA_ATTN_CLUSTER=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_c$v.out 2> $R/pi0_c$v.err
  echo "pi0 attention shares in clusters=$v"; show $R/pi0_c$v.out
done
date
