#!/bin/bash
# Prepared in run 42 (~7 min): GR00T's backbone kernel by kernel beside torch.compile's, whose
# profile timed out at 150 s in run 42 call 3 (torch.compile under the profiler). Predicted: the
# same cuBLASLt GEMMs within ~2 %, PyTorch's cuDNN attention (SigLIP, Qwen) 3-5 µs a layer faster,
# our norms ahead of Triton's (the pattern of pi0.5's backbone in run 42 call 3).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rg; mkdir -p $R
trap 'gzip -f $R/*.csv 2>/dev/null; tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
[ -d /tmp/groot ] || $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1
date
NCU="ncu --clock-control none --cache-control none --graph-profiling node --profile-from-start off --nvtx --metrics gpu__time_duration.sum --csv"
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 90 $NCU --nvtx-include "edgevla.groot.backbone/" --log-file $R/e_groot_bb_v1.csv $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1 --repeat 2 --warmup 2 --profile-last 1 > /dev/null 2> $R/e_groot_bb_v1.err
echo "ncu edgevla groot rc=$?"; date
cd $REPO/bench
timeout 330 $NCU --nvtx-include "torch.compile.backbone/" --log-file $R/t_groot_bb_v1.csv python3 torch_groot.py --checkpoint /tmp/groot --views 1 --variants compile --repeat 2 --warmup 1 --profile-ranges > /dev/null 2> $R/t_groot_bb_v1.err
echo "ncu torch groot rc=$?"; date
python3 kernel_breakdown.py e_groot_v1=$R/e_groot_bb_v1.csv t_groot_v1=$R/t_groot_bb_v1.csv --top 40 --json $R/breakdown.json > $R/breakdown.txt 2>&1
head -c 7000 $R/breakdown.txt
