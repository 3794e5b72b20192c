#!/bin/bash
# Run 70 call 1 (prepared without device time): run 69's call 3, plus pi0.5's graph with its
# preprocess executor not spinning. Arms, each alternated twice, launched 8 s, recorded:
#   g_new   launch/groot_n16_cuda.yaml as committed (every executor spins but the preprocess's)
#   g_none  the same with no spinning at all (run 68's file)
#   g_held  every executor spins, the preprocess's too: since run 70 it spins only for the
#           camera's callback (its state, prompt and chunk inputs are held, QoS::held_input)
#   g_t1    as committed, the preprocess stage on one thread (the row passes of run 70 made each
#           pass ~2x shorter: is the pool of four still worth its hand-overs?)
#   p_new   launch/pi05_cuda.yaml as committed (every executor spins)
#   p_nopre the same, the preprocess node's own upstream_spin_us: 0
# and the node / launch tests on the host's 16 cores. ~8 min cold.
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
( cd /tmp/b && ctest -j8 -R "^(Node\.|LaunchFile\.|CpuMarks|ThreadPool)" 2>&1 | tail -3 )
E=/tmp/b/bin/edgevla
[ -d /tmp/groot ] || { $E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?; }
[ -d /tmp/pi05 ] || { $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?; }
G=launch/groot_n16_cuda.yaml
sed -e 's/^    upstream_spin_us: 20000$/    upstream_spin_us: 0/' -e '/^        upstream_spin_us: 0$/d' $G > launch/g_none.yaml
cp $G launch/g_new.yaml
sed -e '/^        upstream_spin_us: 0$/d' $G > launch/g_held.yaml
sed -e 's/^        type: preprocess$/        type: preprocess\n        params: {threads: 1}/' $G > launch/g_t1.yaml
P=launch/pi05_cuda.yaml
cp $P launch/p_new.yaml
sed -e 's/^        type: preprocess$/        type: preprocess\n        upstream_spin_us: 0/' $P > launch/p_nopre.yaml
grep -c "upstream_spin_us: 0$" launch/g_*.yaml launch/p_*.yaml
for f in g_new g_none g_held g_t1 p_new p_nopre; do $E launch --check launch/$f.yaml > $R/check_$f.txt 2>&1; echo "launch --check $f rc=$?"; done
nproc; lscpu | grep -E "Thread|Core|Socket|Model name|NUMA node0"
# The row passes on the host's CPU: GR00T's frame pipeline on 1 and 4 threads at a camera's
# cadence and back to back, against the NumPy reference; pi0's resize against PIL (if the host
# has python3-pil). Both in the same call as the graphs.
/tmp/b/bin/edgevla_bench_groot_preprocess --sizes 320x240,640x480 --threads 1,4,1,4 --repeat 100 > $R/groot_pre_threads.jsonl 2>&1
/tmp/b/bin/edgevla_bench_groot_preprocess --sizes 320x240 --threads 1,4,1,4 --repeat 60 --period-ms 33 > $R/groot_pre_cadence.jsonl 2>&1
cat $R/groot_pre_threads.jsonl $R/groot_pre_cadence.jsonl | cut -c1-200
python3 bench/groot_preprocess.py --bin /tmp/b/bin/edgevla_bench_groot_preprocess --repeat 100 --json $R/groot_pre_numpy.jsonl 2>&1 | cut -c1-300
python3 bench/pi0_resize.py --bin /tmp/b/bin/edgevla_bench_pi0_resize --repeat 200 --json $R/pi0_resize_pil.jsonl 2>&1 | cut -c1-300
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
  head -8 $R/$tag.threads.txt
  rm -rf $D
}
for r in 1 2; do
  for a in new none held t1; do launch g_$a g_${a}_$r /tmp/groot; done
  for a in new nopre; do launch p_$a p_${a}_$r /tmp/pi05; done
done
date
