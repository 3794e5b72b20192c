#!/bin/bash
# Run 43 call 4 (~3 min): call 3's backbone GEMM bench again (it stopped at the first shape: k
# slices asked above 56 rows), now without slices above 56 rows and with fc1's GELU epilogue.
# Predictions as in call 3.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin
date
timeout 200 $BP/edgevla_bench_cuda_kernels --only backbone --repeat 20 > $R/backbone_gemms.jsonl 2> $R/backbone_gemms.err; echo "backbone gemm bench rc=$?"; tail -3 $R/backbone_gemms.err
python3 - $R/backbone_gemms.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    d = json.loads(l)
    if d.get('bench') != 'gemm': continue
    fl = 2 * d['m'] * d['n'] * d['k']
    w = d['wgmma']
    lt = d['cublaslt_us']
    print(f"{d['shape']:18s} m {d['m']:4d} n {d['n']:5d} k {d['k']:5d}  cuBLASLt {lt:6.2f} µs ({fl/lt/1e6:5.0f} TFLOP/s)  read-only {d['read_only_us']:5.2f}  wgmma {w}")
PY
date
