#!/bin/bash
# Run 52, call 12 (the last ~4 device minutes): where the persistent kernel's warps stall (Nsight
# Compute's warp states and per-instruction stall samples, one launch of the best form), to see
# why its GEMM epilogues take ~2 us to issue 28 stores a thread while the chain's whole out
# projection takes 2.7 us (call 11).
exec > $OUT/run.log 2>&1
R=/tmp/r12; mkdir -p $R
trap 'gzip -f $R/*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
EDGEVLA_TARGETS="edgevla_bench_cuda_persistent" bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1; echo "build rc=$?"
. /tmp/edgevla-env.sh
date
timeout 120 ncu --section WarpStateStats --section SourceCounters -k regex:persistent_step --launch-skip 3 --launch-count 1 \
  -o $R/pk /tmp/b/bin/edgevla_bench_cuda_persistent --repeat 3 --rounds 1 > $R/ncu.log 2>&1; echo "ncu rc=$?"
date
ncu -i $R/pk.ncu-rep --page details --csv > $R/details.csv 2>&1; grep -i "stall\|warp cycles" $R/details.csv | cut -c1-200 | head -40
ncu -i $R/pk.ncu-rep --page source --csv --print-source sass > $R/sass.csv 2>/dev/null; wc -l $R/sass.csv; rm -f $R/pk.ncu-rep
date
