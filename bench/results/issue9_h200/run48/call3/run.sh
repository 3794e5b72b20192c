#!/bin/bash
# Run 48 call 3: the pi0 backbone's RoPE launch also writing each layer's keys and values into the
# cache (and into a bound block written inside the pass): rope_cache, EDGEVLA_CUDA_ROPE_CACHE=1, the
# new default, against the rotation followed by two (bound: four) graph memcpy nodes a layer (0).
# Call 2 found two extra cross-stream edges a layer cost ~0.24 ms: if a memcpy node's hand-over
# costs alike (kernel → copy → copy → kernel), predicted −0.1 to −0.25 ms at both view counts;
# the head unchanged. GPU suite first (new cuda_rope_cache_test), then the E2E alternated twice,
# then launch/pi05_cuda.yaml 1 against 0 (12 s each).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/config.json ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 230 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "side vs inline\|bound layered vs whole" /tmp/b/Testing/Temporary/LastTest.log | head -6
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for r in 1 2; do
  for rc in 1 0; do
    EDGEVLA_CUDA_ROPE_CACHE=$rc EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_rc${rc}_$r.out 2> $R/pi0_rc${rc}_$r.err
    echo "pi0.5 rope cache $rc"; show $R/pi0_rc${rc}_$r.out
  done
done
date
for rc in 1 0; do
  d=/tmp/run_pi05_rc${rc}
  EDGEVLA_CUDA_ROPE_CACHE=$rc EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=$d timeout 60 $E launch launch/pi05_cuda.yaml --duration 12 > $R/launch_rc${rc}.txt 2>&1
  $E bag report $d/pi05_cuda.mcap > $R/report_rc${rc}.txt 2>&1
  echo "launch, rope cache $rc"; grep -E "camera -> actuation|framework overhead" $R/report_rc${rc}.txt
done
date
