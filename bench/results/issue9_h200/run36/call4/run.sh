#!/bin/bash
# Run 36 call 4: the GPU suite at the session's last code (f32 shares again, pi0 / pi0.5's o and
# down in 4 k parts), and the k-part caps once more, alternated twice: pi0.5 in 2 against 4
# (call 1 took 4 over 8), GR00T's out and ff2 in 4 against 8 (run 34: 4 not faster, once).
# Predicted: within ±0.05 ms a head either way (the norm after them reads fewer parts, each part's
# blocks stream longer).
exec > $OUT/run.log 2>&1
R=/tmp/r4; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 300 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for parts in 2 4 2 4; do
  EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_parts$parts.out 2> $R/pi0_parts$parts.err
  echo "pi0 parts $parts"; show $R/pi0_parts$parts.out
done
for parts in 4 8 4 8; do
  EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > $R/groot_parts$parts.out 2> $R/groot_parts$parts.err
  echo "groot parts $parts"; show $R/groot_parts$parts.out
done
date
