#!/bin/bash
# Session 2026-11-26f call 1: every split count of the stages' other attention calls (backbone
# prefixes, vision towers, GR00T's DiT) beside the plan's pick.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { cp $REPO/.repro/s9call1.sh $R/; tar czf $OUT/results_s9c1.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
export CUDAARCHS=90; rm -rf /tmp/b; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
date
for rep in 1 2; do
  timeout 200 /tmp/b/bin/edgevla_bench_cuda_kernels --only attention_shapes --repeat 30 > $R/attn_shapes_$rep.jsonl 2> $R/attn_shapes_$rep.err
  echo "rc=$?"
done
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
rows = {}
for rep in (1, 2):
    for l in open(f"{R}/attn_shapes_{rep}.jsonl"):
        d = json.loads(l)
        rows.setdefault((d["shape"], d["splits_asked"]), []).append(d["us_per_call_in_graph"])
        rows[(d["shape"], "planned")] = [d["planned_splits"]]
for k, v in rows.items():
    print(k, v)
PY
date
