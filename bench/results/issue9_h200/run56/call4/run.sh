#!/bin/bash
# Run 56, call 4 (~7 min, the session's last device minutes): the many-rows kernel as a candidate
# of every GEMM plan from 128 rows on (EDGEVLA_CUDA_WIDE_GEMM, default 1; 0 leaves it out), kept
# where it times faster than cuBLASLt (call 3's bench: q|k|v at 648 rows 12.7 µs against 14.4,
# every other tower shape slower). The GPU suite; which shapes the plans gave it; GR00T and pi0.5
# with it offered / not, alternated twice (separate plan files); PyTorch's GR00T in the same run.
# Predicted: 136/136; GR00T backbone at two views −0.03 to −0.05 ms (q|k|v), one view unchanged;
# pi0.5 at three views −0.01 to −0.02.
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
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WIDE_GEMM=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot_w$v.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot WIDE=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WIDE_GEMM=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0_w$v.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 WIDE=$v rc=$?"; show $R/pi0_$v.out
done
echo "picks on the many-rows kernel (key | lt chunk ms rows):"
for f in /tmp/plans_groot_w1.txt /tmp/plans_pi0_w1.txt; do echo "$f: $(wc -l < $f) lines"; awk -F' [|] ' '{split($2, v, " "); if (v[4] > 0) print "  " $0}' $f | cut -c1-200 | head -20; done
date
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    print('views', d['views'], {k: (v['e2e_ms']['median'], v['backbone_ms']['median']) for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms'), 'head steps floor', fl.get('head_steps_floor_ms'))
PY
date
