#!/bin/bash
# Run 54, call 4 (~7 min, the session's last device minutes): the whole GPU suite at the session's
# final code (RESIDUAL and paired rows taken out; AttentionArgs::key_groups / ::shares and their
# test kept); the vision towers' attention shapes beside PyTorch's SDPA backends timed the same way
# (bench/torch_attention_shapes.py: a graph of 18 calls); Nsight Compute's full set on one
# attn_bf16 launch at GR00T's two-view tower shape and on cuDNN's kernel at the same shape (where
# the time goes: calls 2 and 3 ruled out the warps' latency and the shared-memory reads); GR00T
# beside torch.compile once more.
# Predicted: 125/125; cuDNN 10-11 µs at GR00T's two views against our 15.9.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 240 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
gzip -c /tmp/b/Testing/Temporary/LastTest.log > $R/LastTest.log.gz 2>/dev/null
wait; date
cd $REPO/bench
timeout 90 python3 torch_attention_shapes.py > $R/torch_attention_shapes.out 2> $R/torch_attention_shapes.err; echo "torch sdpa rc=$?"
cat $R/torch_attention_shapes.out | cut -c1-200
for sh in siglip_1view siglip_3view groot_siglip_1view groot_siglip_2view; do
  timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape $sh --split plan --repeat 30 > $R/attn_$sh.out 2>&1
  grep attention_shape $R/attn_$sh.out | cut -c1-200
done
NCU="ncu --set full --import-source yes --launch-skip 3 --launch-count 1"
timeout 120 $NCU -k regex:attn_bf16 -o $R/ncu_attn_ours $BP/edgevla_bench_cuda_kernels --only attention_shapes --shape groot_siglip_2view --split plan --repeat 3 > /dev/null 2>&1; echo "ncu ours rc=$?"
timeout 120 $NCU -k regex:"cudnn|sdpa|fmha" -o $R/ncu_attn_cudnn python3 torch_attention_shapes.py --shape groot_siglip_2view --backend cudnn --repeat 3 > /dev/null 2>&1; echo "ncu cudnn rc=$?"
for f in ours cudnn; do
  ncu --import $R/ncu_attn_$f.ncu-rep --page details --print-units base > $R/ncu_attn_$f.txt 2>&1
  grep -E "^  [a-z_]|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc A|Block Size|Grid Size|Shared Memory Configuration Size|Dynamic Shared|Warp Cycles Per Issued|No Eligible|L1/TEX Hit|L2 Hit" $R/ncu_attn_$f.txt | head -30
  ncu --import $R/ncu_attn_$f.ncu-rep --page raw --csv --metrics smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_tex_throttle,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_imc_miss,smsp__pcsamp_warps_issue_stalled_misc > $R/ncu_stalls_$f.csv 2>&1
  tail -2 $R/ncu_stalls_$f.csv | cut -c1-1500
done
rm -f $R/*.ncu-rep
date
. $REPO/bench/results/issue9_h200/show.sh
cd $REPO
EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot.out 2> $R/groot.err
echo "groot rc=$?"; show $R/groot.out
cd $REPO/bench
timeout 150 python3 torch_groot.py --checkpoint /tmp/groot --views 1,2 --variants graph,compile --floor --repeat 20 --warmup 5 --json $R/torch_groot.jsonl > /dev/null 2> $R/torch_groot.err
echo "torch groot rc=$?"
python3 - $R <<'PY'
import json, sys
for l in open(f"{sys.argv[1]}/torch_groot.jsonl"):
    d = json.loads(l); fl = d.get('floor', {})
    print('views', d['views'], {k: (v['e2e_ms']['median'], v['backbone_ms']['median']) for k, v in d['variants'].items()}, 'floor', fl.get('floor_ms'), 'head steps floor', fl.get('head_steps_floor_ms'))
PY
date
