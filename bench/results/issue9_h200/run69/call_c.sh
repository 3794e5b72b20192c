#!/bin/bash
# Run 69 call 3: the committed GR00T launch file (every executor spins but the preprocess stage's)
# against no spinning (run 68's file), alternated twice (short of device time: no pi0.5 arms).
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
( cd /tmp/b && ctest -j8 -R "^(Node\.|LaunchFile\.|CpuMarks|ThreadPool)" 2>&1 | tail -3 )
E=/tmp/b/bin/edgevla
[ -d /tmp/groot ] || { $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?; }
L=launch/groot_n16_cuda.yaml
sed -e 's/^    upstream_spin_us: 20000$/    upstream_spin_us: 0/' -e '/^        upstream_spin_us: 0$/d' $L > launch/g_none.yaml
cp $L launch/g_new.yaml
grep -c "upstream_spin_us: 0$" launch/g_*.yaml
$E launch --check launch/groot_n16_cuda.yaml > $R/check.txt 2>&1; echo "launch --check rc=$?"
nproc; lscpu | grep -E "Thread|Core|Socket|Model name|NUMA node0"
launch() {  # file tag checkpoint
  local f=$1 tag=$2 D=/tmp/run_$2 i; rm -rf $D
  EDGEVLA_CHECKPOINT=$3 EDGEVLA_RUN_DIR=$D timeout 40 $E launch launch/$f.yaml --duration 8 > $R/$tag.launch.txt 2>&1 &
  local lp=$!
  for i in $(seq 60); do grep -q "group 'main' started" $R/$tag.launch.txt 2>/dev/null && break; sleep 0.25; done
  local pid=$(grep -o "group 'main' started (pid [0-9]*" $R/$tag.launch.txt | grep -o "[0-9]*$")
  sleep 3; [ -n "$pid" ] && python3 bench/results/issue9_h200/run69/thread_cpu.py $pid 3 > $R/$tag.threads.txt 2>&1
  wait $lp; echo "$f ($tag) rc=$?"
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/$tag.report.txt
  head -12 $R/$tag.threads.txt
  rm -rf $D
}
for r in 1 2; do for a in new none; do launch g_$a g_${a}_$r /tmp/groot; done; done
date
