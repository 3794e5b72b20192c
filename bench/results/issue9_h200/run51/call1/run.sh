#!/bin/bash
# Run 51, call 1 (~7 min cold):
# 1. The whole GPU suite at this code (new: l2_prefetch's kernel test; the weights-ahead tests of
#    both families: bit-identical features and actions with the side stream's prefetches).
# 2. Weights read into L2 ahead on a side stream, alternated twice:
#    EDGEVLA_CUDA_TOWER_PREFETCH=1 / 2 (the vision towers: the GEMM one or two ahead asked for
#    before each GEMM) and EDGEVLA_CUDA_LLM_PREFETCH=16 / 32 (GR00T's LLM: q|k|v before its norm,
#    o + N MB of gate|up under RoPE and attention, down under SwiGLU), against the default (none).
#    Predicted: GR00T backbone -0.1 to -0.3 ms from the tower (its GEMMs 47.7 us a layer in the
#    graph against 31.5 back to back with weights in L2), -0.05 to -0.25 from the LLM; pi0.5
#    backbone -0.05 to -0.2 (tower at 256 / 768 rows). Risk: the prefetches delay the kernels'
#    own reads (runs 16-17 on the heads).
# 3. PyTorch once, both families (same-run ratios).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
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
(cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
grep -h "WeightsReadAhead\|L2Prefetch" $R/ctest_gpu.log | head
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do
  for v in "0 0" "1 0" "2 0" "1 16" "1 32" "0 32"; do
    set -- $v; tag=t$1_l$2_$round
    EDGEVLA_CUDA_TOWER_PREFETCH=$1 EDGEVLA_CUDA_LLM_PREFETCH=$2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
    echo "groot tower $1 llm $2 round $round"; show $R/groot_$tag.out
  done
  for t in 0 1 2; do
    EDGEVLA_CUDA_TOWER_PREFETCH=$t EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_t${t}_$round.out 2> $R/pi0_t${t}_$round.err
    echo "pi0.5 tower $t round $round"; show $R/pi0_t${t}_$round.out
  done
  date
done
cd $REPO/bench
timeout 100 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
timeout 150 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"; date
python3 - $R <<'PY'
import json, sys
R = sys.argv[1]
for f in ("torch_pi0.jsonl", "torch_groot.jsonl"):
    try:
        for l in open(f"{R}/{f}"):
            d = json.loads(l)
            fl = d.get('floor', {})
            print(f, 'views', d['views'], {k: v['e2e_ms']['median'] for k, v in d['variants'].items()},
                  {k: v['backbone_ms']['median'] for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms', fl.get('read_all_weight_bytes_ms')))
    except OSError as e:
        print(e)
PY
date
