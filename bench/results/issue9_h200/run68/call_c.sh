#!/bin/bash
# Run 68 call 3: GR00T's graph at the new defaults (launch/groot_n16_cuda.yaml without upstream
# spinning, preprocess threads 0 = the core-count pick, 4 here) against the run-67 defaults
# (spinning 20 ms, one preprocess thread), alternated three times; GR00T's preprocessor test.
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
( cd /tmp/b && ctest -R "GrootPreprocessor|CpuMarks" 2>&1 | tail -3 )
E=/tmp/b/bin/edgevla
[ -d /tmp/groot ] || { $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?; }
sed 's/upstream_spin_us: 0$/upstream_spin_us: 20000/' launch/groot_n16_cuda.yaml > launch/groot_n16_cuda_run67.yaml
grep -c "upstream_spin_us: 20000" launch/groot_n16_cuda_run67.yaml
launch() {  # file tag [--set ...]
  local f=$1 tag=$2 D=/tmp/run_$2; shift 2; rm -rf $D
  EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=$D timeout 40 $E launch launch/$f.yaml --duration 6 "$@" > $R/$tag.launch.txt 2>&1
  echo "$f $* ($tag) rc=$?"
  grep -o "frames resized on [0-9]* thread(s)" $R/$tag.launch.txt | head -1
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/$tag.report.txt
  rm -rf $D
}
for i in 1 2 3; do launch groot_n16_cuda new_$i; launch groot_n16_cuda_run67 old_$i --set preprocess.threads=1; done
date
