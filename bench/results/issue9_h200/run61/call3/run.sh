#!/bin/bash
# Run 61 call 3 (~7 min): the final code. The GPU suite (the GEMM search taken out again; GR00T's
# state token and τ product on the side stream, checked bit for bit against OVERLAP 0 and 1), then
# GR00T alternated three times: def (OVERLAP=2, share tiles 3) / ov1 (EDGEVLA_CUDA_GROOT_OVERLAP=1)
# / st2 (EDGEVLA_ATTN_WG_SHARE_TILES=2), pi0.5 once, PyTorch's GR00T (torch.compile + graph).
# Predicted: ov2 −0.005 to −0.015 ms against ov1 (the state token's five launches under the image
# GEMM); st2 +0.02 to +0.04 at two views (calls 1-2).
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
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 280 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2 3; do for arm in def ov1 st2; do [ $SECONDS -gt 420 ] && break 2
  unset EDGEVLA_ATTN_WG_SHARE_TILES EDGEVLA_CUDA_GROOT_OVERLAP
  case $arm in
    ov1) export EDGEVLA_CUDA_GROOT_OVERLAP=1 ;;
    st2) export EDGEVLA_ATTN_WG_SHARE_TILES=2 ;;
  esac
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
done; done
unset EDGEVLA_ATTN_WG_SHARE_TILES EDGEVLA_CUDA_GROOT_OVERLAP
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi05.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi05.out 2> $R/pi05.err
echo "pi05 rc=$?"; show $R/pi05.out
date
cd $REPO/bench
[ $SECONDS -lt 500 ] && { timeout 90 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
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
