#!/bin/bash
# Run 32 call 4: the final commit of this session (the cpu engines on one CpuEngine base; the
# cuda code as in call 1 without the RoPE change): every GPU test, both families E2E once,
# and the CPU suite on the host 16 cores.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { cp $REPO/bench/results/issue9_h200/run32/call4/s12call4.sh $R/; tar czf $OUT/results_s12c4.tgz -C $R . ; }
trap finish EXIT
export CUDAARCHS=90; date; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu ctest rc=$?"; tail -4 $R/gpu_ctest.log) &
wait; date
grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|Failed  " $R/gpu_ctest.log | head
show() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for i in 1; do
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$i.out 2> $R/pi0_$i.err; echo "pi0 $i"; show $R/pi0_$i.out
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 120 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$i.out 2> $R/groot_$i.err; echo "groot $i"; show $R/groot_$i.out
done
date
(cd /tmp/b && timeout 240 ctest -LE gpu -j16 -E '^(python_client|mcap_js_conformance|mcap_js_.*|Install.*)$' > $R/cpu16_ctest.log 2>&1; echo "cpu16 ctest rc=$?"; tail -4 $R/cpu16_ctest.log; grep -E "\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout" $R/cpu16_ctest.log | head)
gzip -f $R/cpu16_ctest.log
date
