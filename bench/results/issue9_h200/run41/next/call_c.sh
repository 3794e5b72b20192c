#!/bin/bash
# Prepared in run 41 for the next session (~4 min): the warpgroup GEMM on int8 weights
# (kernels/wgmma_w8.*, built after call 7, never run on a GPU). Its GPU test first (quantisation
# read back, products against the host, a replayed graph, refusals), then
# edgevla_bench_cuda_w8: each head projection shape on int8 against bf16 weights, alternated.
# Predicted: int8 / bf16 0.6-0.75 at gate|up and GR00T's ff1 / ff2 (half the weight bytes, the
# widening hidden under the copies), 0.75-0.9 at q|k|v, o and down; ≥ 1 would mean the converter
# warpgroup sits on the critical path (then: widen in the consumers, or fewer stages ahead).
exec > $OUT/run.log 2>&1
R=/tmp/rw; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
timeout 200 /tmp/b/bin/cuda_wgmma_w8_test > $R/w8_test.log 2>&1; echo "w8 test rc=$?"; grep -E "rel-L2|OK \]|FAILED|Failure|Expected|Which" $R/w8_test.log | head -30
timeout 200 /tmp/b/bin/edgevla_bench_cuda_w8 --rounds 5 > $R/w8_bench.jsonl 2> $R/w8_bench.err; echo "w8 bench rc=$?"
python3 - $R/w8_bench.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d = json.loads(l)
        print(f"{d['shape']:10s} parts {d['parts']}  bf16 {d['bf16_us']}  int8 {d['w8_us']}  ratio {d['w8_over_bf16']}")
PY
date
