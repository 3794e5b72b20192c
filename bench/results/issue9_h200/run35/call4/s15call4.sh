#!/bin/bash
# Run 35 call 4: the k split only where a projection's feature blocks fill at most a quarter of
# the device (GR00T's cross q), never with RoPE's epilogue (call 3's pi0.5 engine test failed on
# that refusal); and Nsight Compute's full set on the warpgroup GEMM's plain and GeGLU forms at
# pi0.5's gate|up (the GeGLU form is ~3 µs slower in the kernel bench: where do its warps wait?).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r4; mkdir -p $R
finish() { gzip -f $R/ncu_*.csv 2>/dev/null; tar czf $OUT/results_s15c4.tgz -C $R . ; }
trap finish EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
timeout 90 $BP/cuda_wgmma_gemm_test > $R/wgmma_test.log 2>&1; echo "wgmma test rc=$?"; grep "OK \]\|FAILED\|Failure" $R/wgmma_test.log | head -20
timeout 150 $BP/cuda_pi0_test --gtest_filter='CudaPi0Wgmma*' > $R/pi0_wgmma_test.log 2>&1; echo "pi0 wgmma rc=$?"; grep "run \|FAILED\|Failure" $R/pi0_wgmma_test.log | head
for form in 0 1; do
  timeout 120 ncu --set full --kernel-name-base mangled --kernel-name regex:"WgmmaEpilogueE${form}ELi1E" --launch-skip 8 --launch-count 2 \
    --csv --page details --log-file $R/ncu_gate_up_form$form.csv $BP/edgevla_bench_cuda_kernels --only gemm --shape gate_up > /dev/null 2>&1
  echo "ncu form $form rc=$?"
done
python3 - $R/ncu_gate_up_form0.csv $R/ncu_gate_up_form1.csv <<'PY'
import csv, sys
for f in sys.argv[1:]:
    print("==", f)
    rows = [r for r in csv.reader(open(f)) if len(r) > 10]
    if not rows: continue
    head = rows[0]
    ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
    ui = head.index("Metric Unit") if "Metric Unit" in head else None
    ii = head.index("ID")
    for r in rows[1:]:
        if r[ii] != rows[1][ii]: break
        print(r[mi], "|", r[vi], "|", r[ui] if ui is not None else "")
PY
date
