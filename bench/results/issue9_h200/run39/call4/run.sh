#!/bin/bash
# Run 39, call 4 (~7 min): both families beside PyTorch eager + graph and torch.compile + graph in
# the same run, with the device floors, at the new default (the warpgroup attention kernel with
# one warpgroup a block and K/V by bulk tensor copies for Gemma's prefix), and pi0.5 alternated
# against EDGEVLA_ATTN_WG=0 (attn_bf16, the old default). Predicted from call 3's kernel bench
# (33.5 against 48.5 µs at 3 views, 17.5 against 22.2 at one; 17 layers): backbone -0.25 ms at 3
# views, -0.08 at one; pi0.5 at 1.50x / 1.44x torch.compile if PyTorch runs as in run 37.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rb; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for v in new old new old; do
  W=; [ $v = old ] && W=0
  EDGEVLA_ATTN_WG=$W EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err; echo "pi0 $v"; show $R/pi0_$v.out
done
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot.out 2> $R/groot.err; echo "groot"; show $R/groot.out
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
