#!/bin/bash
# Run 69 call 1: a node's own upstream_spin_us. GR00T's graph with the group spinning (20 ms) and
# the backbone's executor not (`upstream_spin_us: 0` on that node: nothing spins beside the
# preprocess stage's four threads) against the launch file as committed (no spinning anywhere),
# alternated three times; the node and launch-file tests on 16 cores.
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
( cd /tmp/b && ctest -j8 -R "^(Node\.|LaunchFile\.|CpuMarks|ThreadPool)" 2>&1 | tail -4 )
E=/tmp/b/bin/edgevla
[ -d /tmp/groot ] || { $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?; }
sed -e 's/^    upstream_spin_us: 0$/    upstream_spin_us: 20000/' -e '/^        type: backbone$/a\        upstream_spin_us: 0' \
  launch/groot_n16_cuda.yaml > launch/groot_n16_cuda_nodespin.yaml
grep -n "upstream_spin_us: [0-9]*$" launch/groot_n16_cuda_nodespin.yaml
launch() {  # file tag [--set ...]
  local f=$1 tag=$2 D=/tmp/run_$2; shift 2; rm -rf $D
  EDGEVLA_CHECKPOINT=/tmp/groot EDGEVLA_RUN_DIR=$D timeout 40 $E launch launch/$f.yaml --duration 6 "$@" > $R/$tag.launch.txt 2>&1
  echo "$f $* ($tag) rc=$?"
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/$tag.report.txt
  rm -rf $D
}
for i in 1 2 3; do launch groot_n16_cuda_nodespin nodespin_$i; launch groot_n16_cuda nospin_$i; done
date
