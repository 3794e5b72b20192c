#!/bin/bash
# Run 50, call 5 (~4 min cold): EDGEVLA_ATTN_KEEP_CACHE=1 (new, off by default): the heads'
# attention (attn_bf16) loads what every step reads again (pi0.5's prefix cache, GR00T's cross
# keys and values) with an L2 evict-last policy, beside call 4's default of weights marked
# evict-first. Call 4: the evict-first weights gained 0.2-0.3 ms at one view but only 0.05-0.2 at
# pi0.5's three (a 17.8 MB cache). Predicted: pi0.5 head -0.0 to -0.1 ms at three views, ~0 at
# one; GR00T -0.0 to -0.05. First the heads' GPU tests with it on (a cache hint changes no result).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/re; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1; echo "build rc=$?"
[ -x /tmp/b/bin/edgevla ] || { grep -B2 -A8 "error" $R/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && EDGEVLA_ATTN_KEEP_CACHE=1 timeout 150 ctest -L gpu -R "Pi0|Groot|Attention" -j6 --output-on-failure > $R/ctest_keep.log 2>&1; echo "ctest keep rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_keep.log | head)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for k in 1 0; do
    EDGEVLA_ATTN_KEEP_CACHE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 --stages-alone 1 > $R/pi0_keep${k}_$round.out 2> $R/pi0_keep${k}_$round.err
    echo "pi0.5 keep cache $k round $round"
    grep -h '^{' $R/pi0_keep${k}_$round.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
    EDGEVLA_ATTN_KEEP_CACHE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_keep${k}_$round.out 2> $R/groot_keep${k}_$round.err
    echo "groot keep cache $k round $round"; show $R/groot_keep${k}_$round.out
  done
done
date
