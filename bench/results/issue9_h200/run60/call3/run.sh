#!/bin/bash
# Run 60 call 3: GR00T's image blocks' cross keys|values beside step 0 (EDGEVLA_CUDA_GROOT_OVERLAP=2:
# the text ones first, alone, on the main stream; the image ones on the side stream beside the state
# encoder and step 0's blocks 0-1, joined before block 2) against 1 (text and image side by side,
# joined before step 0), alternated three times; GPU suite (new: 0 and 2 give the bits of 1);
# PyTorch's GR00T. Predicted: E2E −0.01 to −0.03 ms at both view counts (the image chain's ~40 µs
# under DiT blocks that leave DRAM idle most of the time, less what it takes from their SMs).
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
grep -h "changed the actions\|GROOT_OVERLAP" $R/ctest_gpu.log | head
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for arm in 2 1 2 1 2 1; do [ $SECONDS -gt 420 ] && break
  EDGEVLA_CUDA_GROOT_OVERLAP=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone 1 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot overlap $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
done
date
cd $REPO/bench
[ $SECONDS -lt 460 ] && { timeout 120 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
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
