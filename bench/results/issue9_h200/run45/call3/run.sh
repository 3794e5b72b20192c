#!/bin/bash
# Run 45 call 3 (~6 min): where the backbones' time goes, and a 7-stage warpgroup GEMM ring.
# 1. The backbones by kernel class (a -DEDGEVLA_CUDA_ABLATION=ON build; new skip points in the
#    vision tower, GR00T's Qwen layers and pi0.5's Gemma prefix; outputs wrong, timings only).
#    GR00T's backbone is 2.77 ms at one view against a ~0.65 ms weight-read floor and 3.10 for
#    torch.compile: the largest ratio left in either family. Predicted (from run 30's isolated
#    Nsight Compute times, halved for the graph): the tower ~1.2 ms, the LLM ~1.0-1.2.
# 2. The GEMM ring at 7 stages (107 KB, so two blocks fit a multiprocessor and the next chained
#    GEMM's blocks can sit beside this one's and copy their first weights early) against 8
#    (122 KB, one a multiprocessor), both heads alternated twice. Run 35 found 6 and 12 slower
#    than 8 before four-stages-ahead copies and narrow attention; predicted: within ±0.05 ms, more
#    likely slower (early copies competing with the running GEMM, as 8 ahead did in run 41).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90
(EDGEVLA_PFX=/tmp/pfxa bash .debs/build.sh . /tmp/ba -DEDGEVLA_BUILD_TESTS=OFF -DEDGEVLA_CUDA_ABLATION=ON > $R/build_a.log 2>&1; echo "build ablation rc=$?") &
(EDGEVLA_PFX=/tmp/pfx7 bash .debs/build.sh . /tmp/b7 -DEDGEVLA_BUILD_TESTS=OFF -DCMAKE_CUDA_FLAGS=-DEDGEVLA_WGMMA_RING=7 > $R/build_7.log 2>&1; echo "build ring 7 rc=$?") &
wait; date
[ -x /tmp/ba/bin/edgevla ] || { tail -40 $R/build_a.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/ba/bin/edgevla; BA=/tmp/ba/bin; B7=/tmp/b7/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for k in none vit_norm vit_qkv vit_attention vit_o vit_fc1 vit_fc2 llm_norm llm_qkv llm_rope llm_attention llm_o llm_gate_up llm_swiglu llm_down vit_norm,vit_qkv,vit_attention,vit_o,vit_fc1,vit_fc2 llm_norm,llm_qkv,llm_rope,llm_attention,llm_o,llm_gate_up,llm_swiglu,llm_down none; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BA/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_bb_$k.out 2> $R/groot_bb_$k.err
  echo "groot backbone without $k"; show $R/groot_bb_$k.out
done
for k in none vit_norm vit_qkv vit_attention vit_o vit_fc1 vit_fc2 llm_norm llm_qkv llm_rope llm_attention llm_o llm_gate_up llm_geglu llm_down none; do
  EDGEVLA_CUDA_ABLATE=$k EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BA/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_bb_$k.out 2> $R/pi0_bb_$k.err
  echo "pi0.5 backbone without $k"; show $R/pi0_bb_$k.out
done
date
for round in 1 2; do
  for b in 7 8; do
    BP=$BA; [ $b = 7 ] && BP=$B7
    EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_ring${b}_$round.out 2> $R/groot_ring${b}_$round.err
    echo "groot ring $b"; show $R/groot_ring${b}_$round.out
    EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_ring${b}_$round.out 2> $R/pi0_ring${b}_$round.err
    echo "pi0.5 ring $b"; show $R/pi0_ring${b}_$round.out
  done
done
date
