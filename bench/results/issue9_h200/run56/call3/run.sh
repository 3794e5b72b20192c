#!/bin/bash
# Run 56, call 3 (~7 min): the wide GEMM with thread-block clusters sharing the boxes (TMA
# multicast: A's box to cx feature blocks, W's to cz row blocks). Call 2 found it L2-bound without
# them (fc1 at 648 rows: 81 MB from L2 in 18.2 µs, 4.5 TB/s; cuBLASLt 16.4 µs). Its tests; the
# kernel bench at 648 and 324 rows (every form); GR00T's and pi0.5's engine tests with it on;
# GR00T and pi0.5 with WIDE 0 / 1 alternated twice.
# Predicted: at 648 rows with the plan's clusters fc1 18.2 -> ~12.5 µs (A read half as often),
# qkv 13.5 -> ~9.5, fc2 16.7 -> ~12, o 8.6 -> ~6.5; GR00T backbone at two views −0.1 to −0.2 ms
# against cuBLASLt, one view about even.
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
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
timeout 120 $BP/cuda_wide_gemm_test > $R/wide_test.log 2>&1; echo "wide test rc=$?"
grep -E "rel-L2|OK \]|FAILED|Failure|Expected|Which is|actual" $R/wide_test.log | head -60
date
for m in 648 324; do
  timeout 150 $BP/edgevla_bench_cuda_wide_gemm --repeat 3 --rows $m > $R/wide_bench_$m.jsonl 2> $R/wide_bench_$m.err; echo "wide bench $m rc=$?"
  tail -3 $R/wide_bench_$m.err
done
python3 - $R <<'PY'
import json, sys, glob
rows = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + '/wide_bench_*.jsonl')) for l in open(f) if l.startswith('{')]
for d in rows:
    if d['bench'] == 'wide_gemm_summary': print('  %-4s m %4d  cuBLASLt %6.2f  wide planned %6.2f  x%.3f' % (d['shape'], d['m'], d['cublaslt_us'], d['wide_planned_us'], d['speedup']))
    if d['bench'] == 'wide_gemm_layer': print(d)
best = {}
for d in rows:
    if d['bench'] == 'wide_gemm' and d.get('kernel') == 'wide':
        k = (d['shape'], d['m'])
        best.setdefault(k, []).append(d)
for k, ds in sorted(best.items()):
    ds.sort(key=lambda d: d['us'])
    print('  ', k, ' | '.join('%d r %d p %s %.2f%s' % (d['rows'], d['parts'], d['cluster'], d['us'], '*' if d['planned'] else '') for d in ds[:6]))
print('  max rel-L2', max(d['rel_l2_vs_cublaslt'] for d in rows if d.get('kernel') == 'wide'))
PY
wait; date
(cd /tmp/b && EDGEVLA_CUDA_WIDE_GEMM=1 timeout 200 ctest -L gpu -R "CudaGroot|CudaPi0|CudaWide" -j6 --output-on-failure > $R/ctest_engines_wide.log 2>&1; echo "engine tests (WIDE=1) rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_engines_wide.log | head -20)
date
. $REPO/bench/results/issue9_h200/show.sh
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WIDE_GEMM=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_groot.txt timeout 60 $BP/edgevla_bench_cuda_groot --checkpoint /tmp/groot --views 1,2 --repeat 50 --warmup 10 > $R/groot_$v.out 2> $R/groot_$v.err
  echo "groot WIDE=$v rc=$?"; show $R/groot_$v.out
done
for v in 0 1 0 1; do
  EDGEVLA_CUDA_WIDE_GEMM=$v EDGEVLA_GEMM_PLAN_FILE=/tmp/plans_pi0.txt timeout 60 $BP/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1,3 --repeat 50 --warmup 10 > $R/pi0_$v.out 2> $R/pi0_$v.err
  echo "pi0.5 WIDE=$v rc=$?"; show $R/pi0_$v.out
done
date
