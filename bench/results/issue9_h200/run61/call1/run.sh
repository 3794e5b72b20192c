#!/bin/bash
# Prepared in run 60 for the next session's first call (~7 min, not yet run): the GPU suite (covers
# run 60's last commits, built here but never run on a GPU: the GEMM plans' key in its own header,
# the plans' tests in cuda_gemm_plans_test, the towers' 128-key walk tiles and their tests), then GR00T's LLM attention split into fewer key shares.
# Run 60 call 1: the LLM's attention (head dim 128, causal, block b) takes 8.0-8.3 µs in 7 shares
# plus a 3.4 µs combine a layer, cuDNN 8.8-8.9 unsplit. EDGEVLA_ATTN_WG_SHARES fixes the warpgroup
# kernel's shares for every call on it: at 1 only the LLM changes (the towers already run unsplit:
# their 96 blocks leave no room for a second share); 2 and 4 split the towers too, as far as the
# scratch sized for the rule allows. Arms: the rule / 1 / 2 / 4, alternated twice. Predicted: 1 or 2 shares −0.02 to −0.05 ms a pass
# (16 layers × 1-3 µs), the rule kept otherwise.
# Also built after run 60's last call: 128-key walk tiles for the towers' trimmed form with one
# warpgroup a block (EDGEVLA_ATTN_WG_KEYS=128 with EDGEVLA_ATTN_WG128=1; two warpgroups would spill):
# arms wg1 (one warpgroup, 64-key tiles; run 58: +0.08 ms at two views) and wg1k128. Predicted:
# wg1k128 −1 to −2 µs a tower layer against wg1, within ±0.03 ms of the rule.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "candidates, " /tmp/b/Testing/Temporary/LastTest.log 2>/dev/null | sort -u | head
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do for arm in rule 1 2 4 wg1 wg1k128; do [ $SECONDS -gt 440 ] && break 2
  unset EDGEVLA_ATTN_WG_SHARES EDGEVLA_ATTN_WG128 EDGEVLA_ATTN_WG_KEYS
  case $arm in
    rule) ;;
    wg1) export EDGEVLA_ATTN_WG128=1 ;;
    wg1k128) export EDGEVLA_ATTN_WG128=1 EDGEVLA_ATTN_WG_KEYS=128 ;;
    *) export EDGEVLA_ATTN_WG_SHARES=$arm ;;
  esac
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot shares $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
done; done
unset EDGEVLA_ATTN_WG_SHARES EDGEVLA_ATTN_WG128 EDGEVLA_ATTN_WG_KEYS
date
cd $REPO/bench
[ $SECONDS -lt 480 ] && { timeout 100 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l)
    v = {k: (x.get('e2e_ms', {}).get('median') if isinstance(x.get('e2e_ms'), dict) else x.get('e2e_ms')) for k, x in d.get('variants', {}).items()}
    print('torch_groot views', d.get('views'), v)
PY
}
date
