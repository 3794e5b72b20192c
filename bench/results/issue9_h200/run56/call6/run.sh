#!/bin/bash
# Run 56, call 6 (the session's last ~4 device minutes): only the norm kernels' test and bench built;
# LayerNorm in one block-wide reduction (EDGEVLA_CUDA_NORM_ONE_PASS) checked against the host in
# both forms, the norm bench (both forms, against a copy of the same bytes), PyTorch's LayerNorm.
# Predicted: tests pass; one pass 0.3-0.6 µs faster a call at 648 rows; PyTorch compiled 2-3 µs.
exec > $OUT/run.log 2>&1
date
sed 's|^cmake --build "$BUILD" -j "$(nproc)"$|cmake --build "$BUILD" -j "$(nproc)" --target edgevla_bench_cuda_norms cuda_kernels_test|' .debs/build.sh > .debs/build_some.sh
export CUDAARCHS=90; bash .debs/build_some.sh . /tmp/b > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -40; exit 1; }
. /tmp/edgevla-env.sh
date
timeout 60 /tmp/b/bin/cuda_kernels_test --gtest_filter='*LayerNorm*:*NormsAdd*' > $OUT/norm_tests.log 2>&1; echo "norm tests rc=$?"
grep -E "OK \]|FAILED|Failure" $OUT/norm_tests.log | head -10
timeout 40 /tmp/b/bin/edgevla_bench_cuda_norms --repeat 5 > $OUT/norms.jsonl 2> $OUT/norms.err; echo "norms bench rc=$?"
cut -c1-250 $OUT/norms.jsonl
date
(cd bench && timeout 80 python3 torch_norms.py --repeat 20 > $OUT/torch_norms.jsonl 2> $OUT/torch_norms.err; echo "torch norms rc=$?"; cat $OUT/torch_norms.jsonl)
date
