#!/bin/bash
# Run 68 call 2: CPU marks (runtime/util/cpu_marks.hpp): pool workers and upstream spinners settle
# on CPUs no other busy thread of the process holds. (1) the new tests and the whole suite on 16
# cores; (2) the GR00T graph: spin + 4 threads (the case call 1 found 3.3 ms) against no spin + 4
# and spin + 1, alternated; (3) pi0.5's graph at its default (spin, 2 threads) and without spin.
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
( cd /tmp/b && timeout 290 ctest -j16 --output-on-failure \
  -E '^(python_client|mcap_js_conformance|mcap_js_foxglove|mcap_js_bridge|Install.custom_node)$' > $R/ctest.log 2>&1; echo "ctest rc=$?" )
tail -8 $R/ctest.log
grep -E "CpuMarks|ThreadPool|MultiprocessRunWithARealDepth" $R/ctest.log | grep -E "Passed|Failed|Skipped|\*\*\*" | sed 's/  */ /g'
echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
E=/tmp/b/bin/edgevla
$E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?
sed 's/upstream_spin_us: 20000/upstream_spin_us: 0/' launch/groot_n16_cuda.yaml > launch/groot_n16_cuda_nospin.yaml
sed 's/upstream_spin_us: 20000/upstream_spin_us: 0/' launch/pi05_cuda.yaml > launch/pi05_cuda_nospin.yaml
grep -c "upstream_spin_us: 0" launch/groot_n16_cuda_nospin.yaml launch/pi05_cuda_nospin.yaml
launch() {  # file threads tag checkpoint
  local f=$1 th=$2 tag=$3 D=/tmp/run_$3; rm -rf $D
  EDGEVLA_CHECKPOINT=$4 EDGEVLA_RUN_DIR=$D timeout 40 $E launch launch/$f.yaml --duration 6 --set preprocess.threads=$th > $R/$tag.launch.txt 2>&1
  echo "$f threads=$th ($tag) rc=$?"
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk" $R/$tag.report.txt
  rm -rf $D
}
G=/tmp/groot
launch groot_n16_cuda 4 spin_t4 $G; launch groot_n16_cuda_nospin 4 nospin_t4 $G; launch groot_n16_cuda 1 spin_t1 $G
launch groot_n16_cuda 4 spin_t4b $G; launch groot_n16_cuda_nospin 4 nospin_t4b $G; launch groot_n16_cuda 1 spin_t1b $G
$E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?
launch pi05_cuda 0 pi05_spin /tmp/pi05; launch pi05_cuda_nospin 0 pi05_nospin /tmp/pi05; launch pi05_cuda 0 pi05_spin_b /tmp/pi05
date
