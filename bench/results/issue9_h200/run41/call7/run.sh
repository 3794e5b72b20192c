#!/bin/bash
# Run 41 call 7 (the call's command, as given; the machine still held call 6's build and call 5's
# checkpoints): one more alternation of the weight stages copied before the chain's wait.
exec > $OUT/run.log 2>&1; . bench/results/issue9_h200/show.sh; . /tmp/edgevla-env.sh; for a in 8 4 6 3; do EDGEVLA_WGMMA_AHEAD=$a EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 30 /tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 40 --warmup 10 > /tmp/p.out 2>/dev/null; echo "pi0.5 ahead=$a"; show /tmp/p.out; EDGEVLA_WGMMA_AHEAD=$a EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 30 /tmp/b/bin/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 40 --warmup 10 > /tmp/g.out 2>/dev/null; echo "groot ahead=$a"; show /tmp/g.out; done
