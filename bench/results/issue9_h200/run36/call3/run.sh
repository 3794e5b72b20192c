#!/bin/bash
# Run 36 call 3: the split attention's shares in bf16 (half the bytes the attention writes and its
# combine reads), pi0 / pi0.5's o and down in 4 k parts by default, GR00T's step edges measured;
# then the final same-run comparison with PyTorch.
# 1. The GPU suite (the attention tests cover split keys in bf16; the engines' tests the actions).
# 2. bf16 shares against f32 shares (a second build with -DEDGEVLA_ATTN_F32_SHARES), alternated
#    twice, pi0.5 at 1 and 3 views. Predicted: pi0.5 head −0.1 to −0.2 ms (9 shares at 1 view,
#    12 at 3: the attention writes 1.6 / 2.2 MB instead of 3.3 / 4.4, the combine reads as much),
#    the backbone's prefix attention a little faster where it splits.
# 3. GR00T with each step's encoder and decoder left out (ablation build): what the ~14 launches
#    around the DiT cost a step.
# 4. Final: both families beside PyTorch eager + graph and torch.compile + graph, device floors.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r3; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_CUDA_ABLATION=ON > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(EDGEVLA_PFX=/tmp/pfx2 bash .debs/build.sh . /tmp/b2 -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_F32_SHARES > $R/build2.log 2>&1; echo "build2 rc=$?") &
(cd /tmp/b && timeout 300 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
. /tmp/edgevla-env.sh
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for b in b b2 b b2; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0_$b.txt timeout 100 /tmp/$b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_$b.out 2> $R/pi0_$b.err
  echo "pi0 $b ($([ $b = b ] && echo bf16 || echo f32) shares)"; show $R/pi0_$b.out
done
for k in none edges none edges; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 30 --warmup 5 > $R/groot_$k.out 2> $R/groot_$k.err
  echo "groot without $k"; show $R/groot_$k.out
done
date
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0_b.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0.out 2> $R/pi0.err; echo "pi0 final"; show $R/pi0.out
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot.out 2> $R/groot.err; echo "groot final"; show $R/groot.out
cd $REPO/bench
timeout 100 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"; date
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
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
                  {k: v['backbone_ms']['median'] for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms', fl.get('read_all_weight_bytes_ms')), 'head floor', {k: v for k, v in fl.items() if 'head' in k})
    except OSError as e:
        print(e)
PY
date
