#!/bin/bash
# Run 72, call 3: both families beside PyTorch at the current engines (unchanged since run 64),
# GR00T alternated three times with torch.compile + graph (default mode) in the same call, so the
# ratio at two views rests on three pairs, not one; floors and eager + graph in the first round;
# pi0.5 in call_d.sh.
# / 1.47-1.50x); pi0.5 10.4-10.6 / 14.3-14.6 against ~16.1 / ~21.9.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; rm -rf $R; mkdir -p $R
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
for r in 1 2 3; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone $((r == 1)) > $R/groot_$r.out 2> $R/groot_$r.err
  echo "groot $r rc=$?"; show $R/groot_$r.out
  if [ $r = 1 ]; then V=graph,compile; F=--floor; else V=compile; F=; fi
  (cd $REPO/bench && timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants $V $F --repeat 20 --warmup 5 --json $R/torch_groot_$r.jsonl > /dev/null 2> $R/torch_groot_$r.err)
  echo "torch groot $r rc=$?"; summ $R/torch_groot_$r.jsonl
  date
done
date
