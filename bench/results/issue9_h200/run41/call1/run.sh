#!/bin/bash
# Prepared in run 40 for the next session's first device call (~5 min): the GPU suite at run 40's
# last code, which no device ran as committed (RoPE inside the attention off by default, the
# warpgroup-GEMM engine test's extra engine with it on, attn_combine and the cluster merge sharing
# one merge helper: the same floating-point instructions in the PTX). Then pi0.5 E2E at the
# defaults, alternated with the cluster merge at 12 shares once more, as a spread check.
# Afterwards: `run37/next/call_b.sh` (both families beside PyTorch, ~7 min) if a default changed.
exec > $OUT/run.log 2>&1
R=/tmp/na; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 280 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in "0 3" "1 1" "0 3" "1 1"; do
  set -- $v
  EDGEVLA_ATTN_CLUSTER=$1 EDGEVLA_ATTN_MIN_TILES=$2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_c$1_t$2.out 2> $R/pi0_c$1_t$2.err
  echo "pi0 clusters=$1 min tiles=$2"; show $R/pi0_c$1_t$2.out
done
date
