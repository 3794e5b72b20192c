#!/bin/bash
# Run 32 call 2: RoPE inside the action expert's attention (the suffix's q and k rotated as the
# kernel reads them, from one (cos, sin) table a chunk) against the rope kernel before it
# (EDGEVLA_CUDA_ROPE_IN_ATTENTION=0), alternated twice. v2: the table copied into shared memory
# beside Q (one wave of two-group blocks), its reads issued four at a time. The attention and
# pi0 GPU tests only (call 1 ran them all).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r2; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run32/call2/s12call2.sh $R/; tar czf $OUT/results_s12c2.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 -R 'CudaAttention|CudaPi0' --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/gpu_ctest.log | head
grep -E "rope in the attention|RotatesQAndBlockB|action expert.*rope" $R/gpu_ctest.log | head -40
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for i in 1 2; do
  for v in 1 0; do
    EDGEVLA_CUDA_ROPE_IN_ATTENTION=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_rope${v}_$i.out 2> $R/pi0_rope${v}_$i.err
    echo "pi0 rope_in_attention=$v ($i)"; show $R/pi0_rope${v}_$i.out
  done
done
date
