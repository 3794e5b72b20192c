#!/bin/bash
# Run 34 call 4: the warpgroup GEMM as the default of both action heads on Hopper (weights tiled
# in place, layers/blocks chained; the GEMM now releases the next kernel only after its own wait),
# GR00T's DiT on it (bias, GELU, k parts): the GPU suite, both families E2E with it and without
# (EDGEVLA_CUDA_WGMMA=0), and PyTorch eager + graph and torch.compile + graph in the same run.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run34/call4/s14call4.sh $R/; tar czf $OUT/results_s14c4.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
timeout 100 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma rc=$?"; grep "run \|FAILED\|Failure" $R/pi0_wgmma_test.log | head
timeout 100 $BP/cuda_groot_test --gtest_filter='*Warpgroup*' > $R/groot_wgmma_test.log 2>&1; echo "groot wgmma rc=$?"; grep "warpgroup vs\|FAILED\|Failure" $R/groot_wgmma_test.log | head
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'), 'mem', {k: v for k, v in d.items() if 'mem' in k or 'bytes' in k})"; }
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0.out 2> $R/pi0.err; echo "pi0 default"; show $R/pi0.out
EDGEVLA_CUDA_WGMMA=0 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_off.out 2> $R/pi0_off.err; echo "pi0 WGMMA=0"; show $R/pi0_off.out
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot.out 2> $R/groot.err; echo "groot default"; show $R/groot.out
EDGEVLA_CUDA_WGMMA=qkv,out,ff1,ff2 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 50 --warmup 10 > $R/groot_noq.out 2> $R/groot_noq.err; echo "groot no cross q"; show $R/groot_noq.out
EDGEVLA_CUDA_WGMMA=0 EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_off.out 2> $R/groot_off.err; echo "groot WGMMA=0"; show $R/groot_off.out
grep -h "warpgroup" $R/pi0.err $R/groot.err | head -4
date
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
