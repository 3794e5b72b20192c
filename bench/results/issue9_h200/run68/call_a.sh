#!/bin/bash
# Run 68 call 1: (1) REMOTE.txt's whole suite on the H200 host's 16 cores at the run-67 thread pool
# (a worker woken on its caller's CPU leaves it), left out as in run 67 call 2: the tests that
# machine cannot run (no Node.js; Debian libraries in a private prefix). (2) run 67's open question:
# is the upstream spin (launch/groot_n16_cuda.yaml upstream_spin_us 20000) what slows the GR00T
# graph's preprocess on 4 threads? Arms alternated: 4 threads spin / no spin, 1 thread spin.
exec > $OUT/run.log 2>&1
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
( cd /tmp/b && timeout 330 ctest -j16 --output-on-failure \
  -E '^(python_client|mcap_js_conformance|mcap_js_foxglove|mcap_js_bridge|Install.custom_node)$' > $R/ctest.log 2>&1; echo "ctest rc=$?" )
tail -25 $R/ctest.log
echo "edgevla-gpu-* left: $(ls -d /tmp/edgevla-gpu-* 2>/dev/null | wc -l)"
E=/tmp/b/bin/edgevla
$E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?
sed 's/upstream_spin_us: 20000/upstream_spin_us: 0/' launch/groot_n16_cuda.yaml > launch/groot_n16_cuda_nospin.yaml
grep -c "upstream_spin_us: 0" launch/groot_n16_cuda_nospin.yaml
launch() {  # file threads tag
  local f=$1 th=$2 tag=$3 D=/tmp/run_$3; rm -rf $D
  EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=$D timeout 40 $E launch launch/$f.yaml --duration 7 --set preprocess.threads=$th > $R/$tag.launch.txt 2>&1
  echo "$f threads=$th ($tag) rc=$?"
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk" $R/$tag.report.txt
  rm -rf $D
}
launch groot_n16_cuda 4 spin_t4; launch groot_n16_cuda_nospin 4 nospin_t4; launch groot_n16_cuda 1 spin_t1
launch groot_n16_cuda 4 spin_t4b; launch groot_n16_cuda_nospin 4 nospin_t4b; launch groot_n16_cuda_nospin 1 nospin_t1
date
