#!/bin/bash
# Run 32 call 5: what an L2-resident weight would save each few-row GEMM.
# edgevla_bench_cublaslt_search --layouts now also times the engines' layout with every call
# reading the same weight copy (tn_warm), beside copies larger than L2 (tn), twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r5; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run32/call5/s12call5.sh $R/; tar czf $OUT/results_s12c5.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
date
for i in 1 2; do timeout 200 /tmp/b/bin/edgevla_bench_cublaslt_search --layouts > $R/layouts_$i.jsonl 2> $R/layouts_$i.err; echo "rc=$?"; python3 -c "
import json,sys
for l in open('$R/layouts_$i.jsonl'):
    d=json.loads(l); print(d['shape'], 'MB', round(d['out']*d['k']*2/1e6,1), 'tn', d['tn_us'], 'warm', d['tn_warm_us'])"; done
date
