#!/bin/bash
# Run 48 call 5: the prefix attention's key shares on the warpgroup kernel in the engine
# (EDGEVLA_ATTN_WG_SHARES; the plan's rule gives 2 at one view, 1 at three), backbone to the end of
# its device work (--stages-alone) and E2E, shares 1 / 2 / 3 / unset. Predicted: within ±0.05 ms
# of the rule's choice, 2 at three views possibly −0.05 (121 blocks on 132 multiprocessors, one
# wave, against 242 in two).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/re; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
if [ ! -x /tmp/b/bin/edgevla_bench_cuda_pi0 ]; then
  export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
fi
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/config.json ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?)
date
for r in 1 2; do
  for sh in rule 1 2 3; do
    if [ $sh = rule ]; then unset EDGEVLA_ATTN_WG_SHARES; else export EDGEVLA_ATTN_WG_SHARES=$sh; fi
    EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 --stages-alone 1 > $R/pi0_sh${sh}_$r.out 2> $R/pi0_sh${sh}_$r.err
    echo "pi0.5 wg shares $sh round $r"
    grep -h '^{' $R/pi0_sh${sh}_$r.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
  done
done
unset EDGEVLA_ATTN_WG_SHARES
date
