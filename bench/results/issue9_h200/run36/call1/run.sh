#!/bin/bash
# Prepared in run 35 for the next session's first device call (~8 min): the GPU suite, then:
# 1. pi0.5's RoPE in q|k|v's epilogue (EDGEVLA_CUDA_WGMMA_ROPE=1) now reading the angles from a
#    table made once a run (rope_table) instead of 56 sincosf a thread: run 34 measured the
#    computed form +0.45 ms a head, and call 6 put the rope kernel at 1.8 µs a layer and step on
#    the critical path. Predicted: the epilogue with the table below the rope kernel's cost, head
#    −0.1 to −0.25 ms. Its kernel test (the same bits as the computed angles) is in the suite.
# 2. pi0.5's o and down in 4 k parts against 8, repeated (run 34 call 5: head 6.41 against 6.53 ms
#    at one view, once; GR00T was not faster with 4).
# 3. What each kernel costs inside the chained graph (run 35 call 6 measured pi0.5 at one view:
#    attention + combine 1.88 ms of the 6.43 ms head; o and down failed then, fixed since): every
#    class left out in turn, both heads, from a build with -DEDGEVLA_CUDA_ABLATION=ON (outputs
#    wrong, timings only).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rn; mkdir -p $R
trap 'tar czf $OUT/results_next.tgz -C $R .' EXIT
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_CUDA_ABLATION=ON > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
# The GPU suite at run 35's last commits (the profiling build changes nothing unless asked).
(cd /tmp/b && timeout 240 ctest -L gpu -j4 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed" $R/ctest_gpu.log | head -20)
wait
head_ms() { grep -h '^{' $1 | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'], 'head', d.get('action_head_ms', {}).get('median'))"; }
for rope in 1 0 1 0; do
  EDGEVLA_CUDA_WGMMA_ROPE=$rope EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_rope$rope.out 2> $R/pi0_rope$rope.err
  echo "pi0 EDGEVLA_CUDA_WGMMA_ROPE=$rope"; head_ms $R/pi0_rope$rope.out
done
# pi0.5's o and down in 4 k parts instead of 8 (run 34 call 5: head 6.41 against 6.53 ms at one
# view, not repeated; GR00T was not faster with 4).
for parts in 4 8 4 8; do
  EDGEVLA_CUDA_WGMMA_PARTS=$parts EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > $R/pi0_parts$parts.out 2> $R/pi0_parts$parts.err
  echo "pi0 EDGEVLA_CUDA_WGMMA_PARTS=$parts"; head_ms $R/pi0_parts$parts.out
done
for k in none norm qkv rope attention o gate_up down; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 100 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 30 --warmup 5 > $R/pi0_$k.out 2> $R/pi0_$k.err
  echo "pi0 without $k"; head_ms $R/pi0_$k.out
done
for k in none norm qkv attention out ff1 ff2; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 100 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 30 --warmup 5 > $R/groot_$k.out 2> $R/groot_$k.err
  echo "groot without $k"; head_ms $R/groot_$k.out
done
