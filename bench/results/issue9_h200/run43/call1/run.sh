#!/bin/bash
# Prepared in run 42 for the next session's first call (~9-10 min): the int8-weight GEMM with the
# weights widened in the consumers' registers (wgmma's register operand, two consumer warpgroups on
# alternate stages; built after run 42's last device call, never run on a GPU). The whole GPU suite
# first (its test reads back the new tiled order; the engines' int8 checks against the CPU), then
# edgevla_bench_cuda_w8 (each shape against the bf16 kernel, with the output's rel-L2), then both
# heads with EDGEVLA_CUDA_WGMMA_W8=1 against the default, alternated twice.
# Predicted: int8 / bf16 0.65-0.85 on gate|up, ff1, ff2; 0.8-1.0 on q|k|v and o; pi0.5 head −0.4 to
# −0.9 ms, GR00T −0.2 to −0.5. Run 42 call 4 (converter warpgroups): 1.23-1.63, heads +1.1 / +0.5 ms.
# The .debs need PCRE2 and ICU (notes.md, run 41).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/rw; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
(cd /tmp/b && timeout 280 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
cp /tmp/b/Testing/Temporary/LastTest.log $R/ 2>/dev/null
grep -hE "rel-L2 .* against the dequantised|int8 weights vs" $R/LastTest.log | head -40
timeout 100 $BP/edgevla_bench_cuda_w8 --rounds 5 > $R/w8_bench.jsonl 2> $R/w8_bench.err; echo "w8 bench rc=$?"
python3 - $R/w8_bench.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d = json.loads(l)
        print(f"{d['shape']:10s} parts {d['parts']}  bf16 {d['bf16_us']}  int8 {d['w8_us']}  ratio {d['w8_over_bf16']}  rel-L2 {d.get('rel_l2_vs_bf16')}")
PY
# One hand-over between chained kernels (bench/cuda_edges.cu): griddepcontrol.wait against counters
# the blocks increment (all blocks, or one producer block). Predicted: grid 1.5-2.5 µs a hop (the
# heads' measured hand-over), flag_all 0.8-1.5, flag_one 0.5-1; with 32 KB streamed a block all
# forms slower by the stream's time. flag_all ≥ 1 µs under grid would make a counter chain for
# the heads worth building (9 hand-overs a pi0.5 layer-step, 180 a head).
timeout 60 $BP/edgevla_bench_cuda_edges --hops 200 --rounds 5 > $R/edges.jsonl 2> $R/edges.err; echo "edges rc=$?"
python3 - $R/edges.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d = json.loads(l)
        print(f"{d['wait']:9s} blocks {d['blocks']:4d} stream {d['stream_kb']:3d} KB  {d['us_per_hop']:.3f} µs a hop (median {d['us_per_hop_median']:.3f})  wrong {d['wrong_values']}")
PY
wait; date
. $REPO/bench/results/issue9_h200/show.sh
# Both heads A/B: int8 weights (EDGEVLA_CUDA_WGMMA_W8) and flag edges (EDGEVLA_CUDA_FLAG_EDGES,
# built after run 42's device time: q|k|v / gate|up (GR00T: q|k|v / ff1) wait for their norm's
# counter, the norms for o's / down's (out's / ff2's), instead of the kernel ahead's completion;
# down / ff2 for gate|up's / ff1's; predicted (grid − flag_all) µs from the edges bench × 5 a
# layer-step: × 180 for pi0.5's head,
# × 128 for GR00T's; ±0.05 ms if the bench shows them equal).
# A second round while the call has time left.
for round in 1 2; do
  [ $round -eq 2 ] && [ $SECONDS -gt 470 ] && break
  for knob in "W8=0" "W8=1" "FLAGS=1"; do
    case $knob in
      W8=0) env="" ;;
      W8=1) env="EDGEVLA_CUDA_WGMMA_W8=1" ;;
      FLAGS=1) env="EDGEVLA_CUDA_FLAG_EDGES=1" ;;
    esac
    env $env EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_${knob}_$round.out 2> $R/pi0_${knob}_$round.err
    echo "pi0.5 $knob"; show $R/pi0_${knob}_$round.out
    env $env EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_${knob}_$round.out 2> $R/groot_${knob}_$round.err
    echo "groot $knob"; show $R/groot_${knob}_$round.out
  done
done
date
