#!/bin/bash
# Run 60 call 2: cuBLASLt's picks at row counts near each GEMM's offered beside its own
# (EDGEVLA_GEMM_NEAR_ROWS, default 1). Call 1's ncu ranking: torch.compile's LLM gate|up runs
# cuBLASLt's 192x112 tile (21.0 µs at 212 rows) where edgevla's plan at the 224-row bucket takes
# 128x224 (24.6 µs). GPU suite at the new default; GR00T near 1 / 0 alternated twice, each arm its
# own plan file; PyTorch's GR00T; pi0.5 near 1 / 0 where time is left. Predicted: GR00T backbone
# −0.03 to −0.08 ms at two views (gate|up −3.5 µs × 16, the towers' four GEMMs at 648 rows maybe).
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
(cd /tmp/b && timeout 270 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "candidates, " $R/ctest_gpu.log /tmp/b/Testing/Temporary/LastTest.log 2>/dev/null | sort -u | head
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for arm in 1 0 1 0; do [ $SECONDS -gt 400 ] && break
  EDGEVLA_GEMM_NEAR_ROWS=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot_n$arm.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone 1 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot near $arm rc=$?"; show $(ls -t $R/groot_$arm.*.out | head -1)
done
echo "near-rows picks (index >= 8) in the GR00T plan file:"; awk -F' [|] ' '/ near [|]/ {split($2,v," "); if (v[1]>=8) n++; t++} END {print n+0, "of", t+0}' /tmp/plans_groot_n1.txt
date
cd $REPO/bench
[ $SECONDS -lt 440 ] && { timeout 120 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants compile --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l)
    v = {k: (x.get('e2e_ms', {}).get('median') if isinstance(x.get('e2e_ms'), dict) else x.get('e2e_ms')) for k, x in d.get('variants', {}).items()}
    print('torch_groot views', d.get('views'), v)
PY
}
cd $REPO
date
for arm in 1 0; do [ $SECONDS -gt 520 ] && break
  EDGEVLA_GEMM_NEAR_ROWS=$arm EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi05_n$arm.txt timeout 70 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi05_$arm.$SECONDS.out 2> $R/pi05_$arm.err
  echo "pi05 near $arm rc=$?"; show $(ls -t $R/pi05_$arm.*.out | head -1)
done
date
