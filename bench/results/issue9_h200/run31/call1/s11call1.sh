#!/bin/bash
# Run 31 call 1: how many of cuBLASLt's heuristic results to time per GEMM shape
# (EDGEVLA_GEMM_CANDIDATES: 16, the default so far, against 256), on both families'
# E2E and on the per-shape GEMM bench; every GPU test first (PyTorch in the next call).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run31/s11call1.sh $R/; tar czf $OUT/results_s11c1.tgz -C $R . ; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/gpu_ctest.log | head
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
pi0() { local tag=$1 c=$2; local t0=$(date +%s.%N)
  EDGEVLA_GEMM_CANDIDATES=$c EDGEVLA_GEMM_PLAN_FILE=$R/plans_pi0_$c.txt timeout 200 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$tag.out 2> $R/pi0_$tag.err
  echo "pi0 $tag (candidates $c, $(python3 -c "import time;print(round(time.time()-$t0,1))") s)"; show $R/pi0_$tag.out; }
groot() { local tag=$1 c=$2; local t0=$(date +%s.%N)
  EDGEVLA_GEMM_CANDIDATES=$c EDGEVLA_GEMM_PLAN_FILE=$R/plans_groot_$c.txt timeout 200 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$tag.out 2> $R/groot_$tag.err
  echo "groot $tag (candidates $c, $(python3 -c "import time;print(round(time.time()-$t0,1))") s)"; show $R/groot_$tag.out; }
groot c16a 16; groot c256a 256; pi0 c16a 16; pi0 c256a 256; date
groot c16b 16; groot c256b 256; pi0 c16b 16; pi0 c256b 256; date
for c in 16 256; do EDGEVLA_GEMM_CANDIDATES=$c timeout 60 $BP/edgevla_bench_cuda_kernels --only gemm > $R/kernels_gemm_$c.out 2> $R/kernels_gemm_$c.err; echo "kernels gemm $c rc=$?"; done
python3 - $R <<'PY'
import sys, glob, os
R = sys.argv[1]
def load(f):
    d = {}
    for l in open(f):
        if ' | ' not in l: continue
        k, v = l.rstrip('\n').split(' | ')
        k = ' '.join(x for x in k.split(' ') if not x.startswith('cand'))
        p = v.split()
        d[' '.join(k.split(' ')[2:])] = (int(p[0]), float(p[2]) if len(p) > 2 else -1)
    return d
for fam in ('groot', 'pi0'):
    base = load(f'{R}/plans_{fam}_16.txt') if os.path.exists(f'{R}/plans_{fam}_16.txt') else {}
    for c in (256,):
        f = f'{R}/plans_{fam}_{c}.txt'
        if not os.path.exists(f): continue
        o = load(f); tot16 = tot = 0.0
        print(f'== {fam}: 16 against {c} candidates, per shape (ms of one call, the pick)')
        for k, (i, ms) in o.items():
            if k in base:
                b = base[k][1]; tot16 += b; tot += ms
                if ms < 0.97 * b: print(f'  {k[:60]:60s} {b*1000:8.2f} us (#{base[k][0]}) -> {ms*1000:8.2f} us (#{i})')
        print(f'  sum over shapes: {tot16*1000:.1f} -> {tot*1000:.1f} us')
PY
date
