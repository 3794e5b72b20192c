#!/bin/bash
# Run 50, call 6 (the session's last ~5 device minutes; only the targets it needs are built):
# EDGEVLA_CUDA_ATTN_IN_OUT=1 (new, off by default): GR00T's self-attention blocks (16 of 32) compute
# their attention in the out projection's prologue (WgmmaAttnA: each of out's 4 k parts covers 8
# heads, loads their q, k, v for the 17 rows after the chain's wait and writes the softmax · v rows
# into its A tiles), so the attention launch and A's copy go. First the new kernel test and the
# GR00T engines' tests (the fused path against the attention kernel and the CPU), then the head
# A/B. Predicted: GR00T head -0.1 to -0.2 ms (64 attention launches of ~4-5 µs on the chain, less
# ~2 µs each that out's prologue adds; out in 4 parts instead of 5).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rf; mkdir -p $R
date
export CUDAARCHS=90
EDGEVLA_TARGETS="edgevla edgevla_backend_cuda edgevla_backend_cpu edgevla_bench_cuda_groot cuda_wgmma_gemm_test cuda_groot_test" \
  bash .debs/build.sh . /tmp/b > $R/build.log 2>&1; echo "build rc=$?"; tail -1 $R/build.log
[ -x /tmp/b/bin/edgevla_bench_cuda_groot ] || { grep -B2 -A8 "error" $R/build.log | head -40; exit 1; }
date
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 100 ctest -R "CudaWgmmaGemm|CudaGroot" -j6 --output-on-failure > $R/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*|Not Run" $R/ctest.log | head -20; grep -h "attention in the" $R/ctest.log | head -12)
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 1 0 1 0; do
  EDGEVLA_CUDA_ATTN_IN_OUT=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 30 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_io$v.out 2> $R/groot_io$v.err
  echo "groot attn in out $v"; show $R/groot_io$v.out; grep -h "ATTN_IN_OUT" $R/groot_io$v.err | head -1
done
date
tar czf $OUT/results.tgz -C $R . 2>/dev/null
