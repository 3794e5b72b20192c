#!/bin/bash
# Run 72, call 4 (right after call 3, warm): pi0.5 beside PyTorch at the current engines (unchanged since run 64),
# GR00T alternated three times with torch.compile + graph (default mode) in the same call, so the
# ratio at two views rests on three pairs, not one; floors and eager + graph in the first round;
# pi0.5 once each. Predicted: GR00T 6.48-6.55 / 7.09-7.18 ms against 9.8-9.9 / 10.5-10.6 (1.49-1.52x
# / 1.47-1.50x); pi0.5 10.4-10.6 / 14.3-14.6 against ~16.1 / ~21.9.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'cp /tmp/plans_*.txt $R/ 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
[ -x /tmp/b/bin/edgevla ] || bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
[ -d /tmp/groot ] || ($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
[ -d /tmp/pi05 ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
wait; date
. $REPO/bench/results/issue9_h200/show.sh
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache
summ() {
python3 - "$1" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l); fl = d.get('floor', {})
    v = {k: (x.get('e2e_ms', {}).get('median') if isinstance(x.get('e2e_ms'), dict) else x.get('e2e_ms'))
         for k, x in d.get('variants', {}).items()}
    print(' torch views', d.get('views'), v, 'floor', fl.get('floor_ms'),
          'head floor', fl.get('head_steps_floor_ms') or fl.get('head_weight_read_floor_ms'))
PY
}
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 --stages-alone 1 > $R/pi0_1.out 2> $R/pi0_1.err
echo "pi0.5 rc=$?"; show $R/pi0_1.out
(cd $REPO/bench && timeout 170 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err)
echo "torch pi0 rc=$?"; summ $R/torch_pi0.jsonl
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_2.out 2> $R/pi0_2.err
echo "pi0.5 rc=$?"; show $R/pi0_2.out
date
