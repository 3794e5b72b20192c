#!/bin/bash
# Run 42 call 4 (~5 min, the session's last device minutes; tests not built for lack of time:
# the bench checks each int8 output against the bf16 weights' output): the int8-weight GEMM's converter
# widened by two warpgroups (one 8-byte piece → one 16-byte piece a thread, twice a stage) with
# byte permutes (2.75 operations a weight instead of ~6), loads and stores contiguous across a
# warp. Call 1 measured int8 / bf16 1.42-1.95 with one converter warpgroup (~270 ns a stage more).
# Predicted: 0.8-1.1 on gate|up and GR00T's ff1 / ff2 if the converter's issue rate was the limit;
# unchanged (≥ 1.4) if its fence and barrier per stage are.
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/re; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
timeout 100 $BP/edgevla_bench_cuda_w8 --rounds 5 > $R/w8_bench.jsonl 2> $R/w8_bench.err; echo "w8 bench rc=$?"
python3 - $R/w8_bench.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith('{'):
        d = json.loads(l)
        print(f"{d['shape']:10s} parts {d['parts']}  bf16 {d['bf16_us']}  int8 {d['w8_us']}  ratio {d['w8_over_bf16']}  rel-L2 {d.get('rel_l2_vs_bf16')}")
PY
wait; date
. $REPO/bench/results/issue9_h200/show.sh
for v in 1 0; do
  EDGEVLA_CUDA_WGMMA_W8=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 40 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 30 --warmup 5 > $R/pi0_w8_$v.out 2> $R/pi0_w8_$v.err
  echo "pi0.5 int8 weights=$v"; show $R/pi0_w8_$v.out
  EDGEVLA_CUDA_WGMMA_W8=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 40 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 30 --warmup 5 > $R/groot_w8_$v.out 2> $R/groot_w8_$v.err
  echo "groot int8 weights=$v"; show $R/groot_w8_$v.out
done
date
