#!/bin/bash
# Run 32 call 3: does cuBLASLt do better for the engines' few-row GEMMs in another operand layout?
# edgevla_bench_cublaslt_search --layouts: the heuristic's best (every result timed) with the
# weight as A transposed (the engines' "tn"), the weight stored transposed ("nn"), and the
# operands swapped with a row-ordered D ("swap_rowd": m = the few rows), twice.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run32/call3/s12call3.sh $R/; tar czf $OUT/results_s12c3.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
date
for i in 1 2; do timeout 200 /tmp/b/bin/edgevla_bench_cublaslt_search --layouts > $R/layouts_$i.jsonl 2> $R/layouts_$i.err; echo "rc=$?"; cat $R/layouts_$i.jsonl; done
date
