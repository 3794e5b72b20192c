#!/bin/bash
# Prepared in run 64 for the next session's first call (~9 min, not yet run): the GPU suite after
# the GR00T tests' split (CudaGroot and CudaGrootRefusals in one executable, shared cases in
# cuda_groot_cases.hpp; generated checkpoints removed at exit: /tmp must hold no edgevla-gpu-*
# directory afterwards), then both families beside PyTorch in one run at run 64's defaults (the
# towers' residual stream in bf16), with the floors and the heads' steps alone. Predicted: suite
# 146/146, no edgevla-gpu-* left; GR00T 6.48-6.55 / 7.09-7.18 ms, 1.50-1.52x / 1.47-1.49x; pi0.5
# 10.36-10.48 / 14.25-14.44, 1.54-1.56x / 1.51-1.53x; floors as in run 62 (GR00T 2.0x / 1.9x,
# pi0.5 1.87-1.89x / 1.66-1.68x).
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
ls -d /tmp/edgevla-gpu-* 2>/dev/null | head -5 | sed "s/^/left behind: /"; echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for i in 0 1; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 --stages-alone 1 > $R/groot_$i.out 2> $R/groot_$i.err
  echo "groot $i rc=$?"; show $R/groot_$i.out
done
for i in 0 1; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 --stages-alone $((1 - i)) > $R/pi0_$i.out 2> $R/pi0_$i.err
  echo "pi0.5 $i rc=$?"; show $R/pi0_$i.out
done
date
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
timeout 200 python3 torch_pi0_cuda.py --checkpoint /tmp/pi05 --views 1,3 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_pi0.jsonl > /dev/null 2> $R/torch_pi0.err
echo "torch pi0 rc=$?"
python3 - $R <<'PY'
import json, sys
for name in ("torch_groot", "torch_pi0"):
    try:
        lines = open(f"{sys.argv[1]}/{name}.jsonl").readlines()
    except OSError as e:
        print(name, e); continue
    for l in lines:
        d = json.loads(l); fl = d.get('floor', {})
        v = {k: (x.get('e2e_ms', {}).get('median') if isinstance(x.get('e2e_ms'), dict) else x.get('e2e_ms'),
                 x.get('head_steps_ms') or x.get('head_ms')) for k, x in d.get('variants', {}).items()}
        print(name, 'views', d.get('views'), v, 'floor', fl.get('floor_ms'), 'compute', fl.get('compute_floor_ms'),
              'head floor', fl.get('head_steps_floor_ms') or fl.get('head_weight_read_floor_ms'))
PY
date
