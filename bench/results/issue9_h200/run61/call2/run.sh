#!/bin/bash
# Run 61 call 2 (~9 min): the GPU suite at the two changes made after call 1, then both measured.
# 1. The warpgroup attention's rule splits keys only into shares of >= 3 64-key tiles (was 2):
#    changes GR00T's LLM at two views only (224 keys: 2 shares -> 1). Call 1's EDGEVLA_ATTN_WG_SHARES=1
#    arm: 7.123, 7.124 vs 7.145, 7.180 ms. Predicted −0.02 to −0.05 ms at two views, 0 at one.
#    Arm st2 = EDGEVLA_ATTN_WG_SHARE_TILES=2 (the old rule).
# 2. EDGEVLA_GEMM_SEARCH (default 0): 1 = the heuristic's picks per algorithm id (search mode limited
#    by algo id), 2 = also with k split in 2-4. Predicted: a few tower / LLM shapes change pick, −0 to
#    −0.1 ms on the backbone; torch.compile's tower GEMMs ran 59 µs less than ours (run 60 call 1).
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
(cd /tmp/b && timeout 280 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
grep -h "candidates, " /tmp/b/Testing/Temporary/LastTest.log 2>/dev/null | sort -u | head
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for round in 1 2; do for arm in def st2 s1 s2; do [ $SECONDS -gt 400 ] && break 2
  unset EDGEVLA_ATTN_WG_SHARE_TILES EDGEVLA_GEMM_SEARCH
  PF=/tmp/plans_groot.txt
  case $arm in
    st2) export EDGEVLA_ATTN_WG_SHARE_TILES=2 ;;
    s1) export EDGEVLA_GEMM_SEARCH=1; PF=/tmp/plans_groot_s1.txt ;;
    s2) export EDGEVLA_GEMM_SEARCH=2; PF=/tmp/plans_groot_s2.txt ;;
  esac
  t0=$SECONDS
  EDGEVLA_GEMM_PLAN_FILE=$PF timeout 150 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$arm.$SECONDS.out 2> $R/groot_$arm.err
  echo "groot $arm rc=$? $((SECONDS-t0)) s"; show $(ls -t $R/groot_$arm.*.out | head -1)
done; done
unset EDGEVLA_ATTN_WG_SHARE_TILES EDGEVLA_GEMM_SEARCH
date
for arm in def s2 def s2; do [ $SECONDS -gt 520 ] && break
  unset EDGEVLA_GEMM_SEARCH; PF=/tmp/plans_pi05.txt
  [ $arm = s2 ] && { export EDGEVLA_GEMM_SEARCH=2; PF=/tmp/plans_pi05_s2.txt; }
  t0=$SECONDS
  EDGEVLA_GEMM_PLAN_FILE=$PF timeout 120 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi05_$arm.$SECONDS.out 2> $R/pi05_$arm.err
  echo "pi05 $arm rc=$? $((SECONDS-t0)) s"; show $(ls -t $R/pi05_$arm.*.out | head -1)
done
date
