#!/bin/bash
# Run 67 call 4: is the upstream spin what slows the GR00T graph's preprocess on 4 threads? Call
# 3: 3.3-4.0 ms p50 on 4 threads against 2.1-2.2 on 1, while the bench at 30 Hz has 1.8 -> 1.0.
# groot_n16_cuda.yaml as committed (upstream_spin_us 20000) and a copy with 0, preprocess.threads
# 0 (4) and 1, alternated.
exec > $OUT/run.log 2>&1
R=/tmp/rd; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
$E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?
sed 's/upstream_spin_us: 20000/upstream_spin_us: 0/' launch/groot_n16_cuda.yaml > launch/groot_n16_cuda_nospin.yaml
grep -c "upstream_spin_us: 0" launch/groot_n16_cuda_nospin.yaml
launch() {  # file threads tag
  local f=$1 th=$2 tag=$3 D=/tmp/run_$3; rm -rf $D
  EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=$D timeout 50 $E launch launch/$f.yaml --duration 8 --set preprocess.threads=$th > $R/$tag.launch.txt 2>&1
  echo "$f threads=$th ($tag) rc=$?"
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/$tag.report.txt
  rm -rf $D
}
launch groot_n16_cuda_nospin 0 nospin_t0; launch groot_n16_cuda 0 spin_t0; launch groot_n16_cuda_nospin 1 nospin_t1
launch groot_n16_cuda_nospin 0 nospin_t0b; launch groot_n16_cuda 0 spin_t0b
date
