#!/bin/bash
# Run 67 call 3: the thread pool's workers leave their caller's CPU (runtime/util/thread_pool.cpp)
# and the frame pool spins 500 us through a frame's passes, parked after the frames. Call 1 found
# the preprocess node on 4 threads slower than on 1 in the launched graph (GR00T 3.58-3.66 ms p50
# against 2.33-2.37), while the back-to-back bench had it 1.9 -> 1.1 ms: in these virtual machines
# a woken worker lands on its waker's CPU. (1) thread_pool_test on 16 cores; (2) the preprocess
# bench back to back and at a camera's 30 Hz (--period-ms 33), 1/2/4 threads; (3) both CUDA launch
# files, preprocess.threads 1 against the default (0: 4 threads, pi0.5: 2), GR00T alternated twice.
# Predicted: at 30 Hz the 320x240 frame 1.9 -> ~1.0 ms on 4 threads; GR00T's graph preprocess
# 2.35 -> ~1.3-1.6 ms p50 with the default, camera -> actuation 9.9 -> ~9.0-9.3.
exec > $OUT/run.log 2>&1
R=/tmp/rc; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
$BP/thread_pool_test > $R/thread_pool_test.log 2>&1; echo "thread_pool_test rc=$?"; tail -3 $R/thread_pool_test.log
wait; date
show() { python3 -c "
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l); m = d['ms']
    print(sys.argv[2], d['width'], d['height'], 'threads', d.get('threads'), d.get('part', 'frame'), m.get('median', m.get('whole')), m.get('frames', ''))
" $1 $2; }
for p in 0 33; do
  $BP/edgevla_bench_groot_preprocess --sizes 320x240,640x480 --threads 1,2,4 --repeat 60 --period-ms $p --checkpoint /tmp/groot > $R/preprocess_p$p.jsonl 2> $R/preprocess_p$p.err
  echo "preprocess bench period $p rc=$?"; show $R/preprocess_p$p.jsonl "period=$p"
done
launch() {  # file threads tag
  local f=$1 th=$2 tag=$3 CK=/tmp/pi05; [ $f = groot_n16_cuda ] && CK=/tmp/groot
  local D=/tmp/run_${f}_${tag}; rm -rf $D
  EDGEVLA_CHECKPOINT=$CK EDGEVLA_RUN_DIR=$D timeout 60 $E launch launch/$f.yaml --duration 10 --set preprocess.threads=$th > $R/${f}_${tag}.launch.txt 2>&1
  echo "$f threads=$th ($tag) rc=$?"
  $E bag report $D/$f.mcap > $R/${f}_${tag}.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/${f}_${tag}.report.txt
  grep -o "frames resized on [0-9]* thread(s)" $R/${f}_${tag}.launch.txt | head -1
  rm -rf $D
}
launch groot_n16_cuda 1 t1_1; launch groot_n16_cuda 0 t0_1; launch groot_n16_cuda 1 t1_2; launch groot_n16_cuda 0 t0_2
launch pi05_cuda 1 t1_1; launch pi05_cuda 0 t0_1
date
