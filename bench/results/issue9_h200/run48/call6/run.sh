#!/bin/bash
# Run 48 call 6: the pi0 backbone's attention scratch sized for every bucket and camera count
# (attention_scratch_bytes_upto), no longer for the longest prefix alone: at one view the prefix
# (and SigLIP) now split their keys as the plan's rule asks (call 5: forcing two prefix shares, with
# the scratch that gave SigLIP its two as well, took the backbone from 4.64 to 4.565 ms).
# The pi0 and attention GPU tests, then the backbone alone and E2E at the new default, with the
# prefix held at one share (EDGEVLA_ATTN_WG_SHARES=1), and the default again.
# Predicted: one view as call 5's two-share arm (backbone ~4.57, E2E ~10.75 on that machine),
# three views unchanged.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rf; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -f /tmp/pi05/config.json ] || ($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 200 ctest -L gpu -R "CudaAttention|CudaPi0|cuda_launch|cuda_replay" -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "prefix scratch" /tmp/b/Testing/Temporary/LastTest.log | head -3
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
for arm in new shares1 new2; do
  if [ $arm = shares1 ]; then export EDGEVLA_ATTN_WG_SHARES=1; else unset EDGEVLA_ATTN_WG_SHARES; fi
  EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 90 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 --stages-alone 1 > $R/pi0_$arm.out 2> $R/pi0_$arm.err
  echo "pi0.5 $arm"
  grep -h '^{' $R/pi0_$arm.out | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d: print(' views', d['views'], 'e2e', d['e2e_ms']['median'], 'device bytes', d['device_bytes_engines'])
    else: print(' views', d['views'], 'backbone synced', d['backbone_synced_ms'], 'head after', d['head_after_ms'])"
done
date
