#!/bin/bash
# Session 2026-11-26d call 6: ablation of the pi0.5 head's own kernels (a local, uncommitted patch:
# EDGEVLA_ABLATE=<names> skips those launches; results are wrong, timings say what each kernel costs
# inside the graph).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r; mkdir -p $R
finish() { cp $REPO/.repro/s7call6.sh $R/; tar czf $OUT/results_s7c6.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
$BP/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init.log 2>&1 || { tail $R/init.log; exit 1; }
date
export EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt
for v in none rope geglu norm1 norm2 combine attn none "norm1,norm2,rope,geglu,combine" "norm1,norm2,rope,geglu,attn" none; do
  EDGEVLA_ABLATE=$v $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 30 --warmup 10 > "$R/ablate_$v.out" 2> "$R/ablate_$v.err"
  echo "== $v rc=$?"; grep '"bench"' "$R/ablate_$v.out" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); print("   e2e", d["e2e_ms"]["median"], "backbone", d["backbone_ms"]["median"], "head", d["action_head_ms"]["median"])'; grep -i "error\|nan" "$R/ablate_$v.err" | head -3
done
date
