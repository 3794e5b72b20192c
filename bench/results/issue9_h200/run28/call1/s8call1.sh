#!/bin/bash
# Session 2026-11-26e call 1: attention with two key groups a block (8 warps; the even and odd
# key tiles of a share walked side by side, merged in shared memory) against one group
# (-DEDGEVLA_ATTN_KEY_GROUPS=1, the previous kernel); and two groups with shares of 4 tiles.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r1; mkdir -p $R
finish() { cp $REPO/.repro/s8call1.sh $R/; tar czf $OUT/results_s8c1.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
( $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init_pi05.log 2>&1 ) &
( $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > $R/init_groot.log 2>&1 ) &
cd /tmp/b && timeout 300 ctest -L gpu -R -i attention --output-on-failure > $R/gpu_attn.log 2>&1; echo "attention tests rc=$?"; tail -5 $R/gpu_attn.log
cd $REPO
wait; date
bash .debs/build.sh . /tmp/b0 "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_KEY_GROUPS=1" > $R/build0.log 2>&1 || { tail -30 $R/build0.log; }
bash .debs/build.sh . /tmp/b4 "-DCMAKE_CUDA_FLAGS=-DEDGEVLA_ATTN_MIN_TILES=4" > $R/build4.log 2>&1 || { tail -30 $R/build4.log; }
. /tmp/edgevla-env.sh
date
for v in b b0; do
  /tmp/$v/bin/edgevla_bench_cuda_kernels --only attention > $R/kern_attn_$v.out 2> $R/kern_attn_$v.err
  echo "kernel $v:"; grep '"attention"' $R/kern_attn_$v.out | python3 -c '
import json,sys
for d in map(json.loads, sys.stdin): print("  valid %d splits %d: %.2f us" % (d["valid_prefix"], d["splits_asked"], d["us_per_call_in_graph"]))'
done
summ() { python3 -c '
import json,sys
print("  ".join("v%d e2e %.3f head %.3f bb %.3f" % (d["views"], d["e2e_ms"]["median"], d["action_head_ms"]["median"], d.get("backbone_ms", {}).get("median", 0)) for d in map(json.loads, sys.stdin)))'; }
for rep in 1 2; do
  for v in b b0 b4; do
    /tmp/$v/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 10 > $R/pi0_${v}_$rep.out 2> $R/pi0_${v}_$rep.err
    echo "pi0 $v:"; grep -h '"bench"' $R/pi0_${v}_$rep.out | summ
    /tmp/$v/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 10 > $R/groot_${v}_$rep.out 2> $R/groot_${v}_$rep.err
    echo "groot $v:"; grep -h '"bench"' $R/groot_${v}_$rep.out | summ
  done
done
date
cd /tmp/b && timeout 400 ctest -L gpu -j4 --output-on-failure > $R/gpu_ctest.log 2>&1; echo "gpu tests rc=$?"; tail -4 $R/gpu_ctest.log
date
