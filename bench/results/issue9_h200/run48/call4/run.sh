#!/bin/bash
# Run 48 call 4: what the layered hand-over's per-layer event records (backbone) and waits (the
# head's first step, its attentions as plain launches) cost where nothing overlaps:
# edgevla_bench_cuda_pi0 --stages-alone 1 (new) times the backbone to the end of its device work,
# then the head alone on the finished cache, at EDGEVLA_CUDA_LAYER_FENCES 0 / 1, alternated twice;
# the E2E of the same runs beside them. Call 2 found ~3 µs an edge between graph branches.
# Predicted: backbone +0 to +0.05 ms with 18 external record nodes; head +0.02 to +0.1 ms.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/config.json ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?)
date
for r in 1 2; do
  for lf in 1 0; do
    EDGEVLA_CUDA_LAYER_FENCES=$lf EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 --stages-alone 1 > $R/pi0_lf${lf}_$r.out 2> $R/pi0_lf${lf}_$r.err
    echo "pi0.5 layer fences $lf round $r"
    grep -h '^{' $R/pi0_lf${lf}_$r.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
  done
done
date
