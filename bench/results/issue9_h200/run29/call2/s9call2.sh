#!/bin/bash
# Session 2026-11-26f call 2: (1) the attention plan's new rule (one wave of two-group blocks;
# walks of <= 4 tiles unsplit) against the committed rule, alternated twice, pi0.5 and GR00T;
# every GPU test on the new rule; (2) the MLP-half probe v2 against v1 and the separate kernels.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
finish() { cp $REPO/.repro/s9call2.sh $REPO/.repro/mlp2/mlp_probe2.cu $R/; tar czf $OUT/results_s9c2.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
date
(timeout 120 .repro/mlp2/mlp_probe2 > $R/mlp_probe2.log 2>&1; echo "probe rc=$?") 
cat $R/mlp_probe2.log | grep -v "^  trace" | head -20
export CUDAARCHS=90; rm -rf /tmp/b /tmp/b0 /tmp/src0
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1; echo pi05 init rc=$?) &
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1; echo groot init rc=$?) &
mkdir -p /tmp/src0 && (cd $REPO && tar cf - --exclude=./.debs --exclude=./.repro .) | tar xf - -C /tmp/src0
cp .repro/attention_old.cu /tmp/src0/runtime/backends/cuda/kernels/attention.cu
bash .debs/build.sh /tmp/src0 /tmp/b0 > $R/build0.log 2>&1 || { tail -60 $R/build0.log; exit 1; }
. /tmp/edgevla-env.sh
wait; date
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -3 $R/gpu_ctest.log)
grep -E "\*\*\*Failed" $R/gpu_ctest.log | head
date
/tmp/b/bin/edgevla_bench_cuda_kernels --only attention_shapes --repeat 30 > $R/attn_shapes_new.jsonl 2>&1
/tmp/b/bin/edgevla_bench_cuda_kernels --only attention --repeat 30 > $R/attn_expert_new.jsonl 2>&1
pi0() { local v=$1
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 /tmp/$v/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.$2.out 2> $R/pi0_$v.$2.err
  echo "== pi0 $v rc=$?"; grep -h '^{' $R/pi0_$v.$2.out | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'; }
groot() { local v=$1
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 /tmp/$v/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.$2.out 2> $R/groot_$v.$2.err
  echo "== groot $v rc=$?"; grep -h '^{' $R/groot_$v.$2.out | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   views", d["views"], "e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'; }
for rep in 1 2; do pi0 b0 $rep; pi0 b $rep; groot b0 $rep; groot b $rep; done
date
