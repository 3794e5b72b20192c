#!/bin/bash
# Prepared in run 36 for the next session's first device call (~8 min): the GPU suite at run 36's
# last code (the attention's share rule, at least three key tiles a share, was committed after
# the session's last device call), then the expert attention's launch shape swept inside the
# chained head, each form a build of its own, alternated twice (pi0.5, 1 and 3 views):
#   b    default: 32-key tiles, two key groups a block, at least 3 tiles a share (6 / 11 shares)
#   kg1  -DEDGEVLA_ATTN_KEY_GROUPS=1: one group of 4 warps a block (the walk twice as long a block)
#   mt4  -DEDGEVLA_ATTN_MIN_TILES=4: at least 4 tiles a share (5 / 9 shares)
#   k64  -DEDGEVLA_ATTN_HD256_KEYS=64: 64-key tiles at head dim 256 (lost at 1 view before the chain)
# Run 36 call 5 found three 32-key tiles a share fastest at both view counts (1 view: 6 shares
# 0.16 ms faster than 9). Predicted: b within ±0.05 ms of the best; kg1 slower (call 5's trend:
# longer walks a block cost more than fewer shares save beyond 3 tiles).
exec > $OUT/run.log 2>&1
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
for v in "kg1 -DEDGEVLA_ATTN_KEY_GROUPS=1" "mt4 -DEDGEVLA_ATTN_MIN_TILES=4" "k64 -DEDGEVLA_ATTN_HD256_KEYS=64"; do
  set -- $v
  (EDGEVLA_PFX=/tmp/pfx_$1 bash .debs/build.sh . /tmp/$1 -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=$2 > $R/build_$1.log 2>&1; echo "build $1 rc=$?") &
done
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for b in b kg1 mt4 k64 b kg1 mt4 k64; do
  [ -x /tmp/$b/bin/edgevla_bench_cuda_pi0 ] || continue
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_$b.txt timeout 100 /tmp/$b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$b.out 2> $R/pi0_$b.err
  echo "pi0 $b"; show $R/pi0_$b.out
done
date
