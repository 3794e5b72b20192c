#!/bin/bash
# Run 43 call 6 (the session's last ~290 s of device time): narrow attention blocks (32 stacked
# rows, 2 warps a key group; never run on a GPU). The kernel bench's attention shapes (each form
# checked against the plan's output: rel_l2_vs_planned), then pi0.5's head with
# EDGEVLA_ATTN_NARROW=1 against without, if time is left. Predicted: SigLIP at one view 8.6 →
# 6.5-7.5 µs (64 → 128 blocks of half the warps), GR00T's LLM 40 → 80 blocks, similar; pi0.5's
# head ±0.1 ms.
R=$OUT
exec > $R/run.log 2>&1
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > /tmp/build.log 2>&1 || { grep -B2 -A8 "error" /tmp/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
BP=/tmp/b/bin; E=/tmp/b/bin/edgevla
date
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 40 $BP/edgevla_bench_cuda_kernels --only attention_shapes --repeat 20 > $R/attention_shapes.jsonl 2>&1; echo "attention shapes rc=$?"
grep -E '"(plan|narrow|narrow1)"' $R/attention_shapes.jsonl | cut -c1-220
wait; date
. bench/results/issue9_h200/show.sh
for knob in 0 1 0 1; do
  EDGEVLA_ATTN_NARROW=$knob timeout 30 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 20 --warmup 5 > $R/pi0_n$knob.out 2> $R/pi0_n$knob.err
  echo "pi0.5 narrow=$knob"; show $R/pi0_n$knob.out
done
date
