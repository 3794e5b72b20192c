#!/bin/bash
# Prepared in run 66 (not yet run; ~7 min cold): the preprocess stage's thread pool on the H200
# host. (1) edgevla_bench_groot_preprocess at 320x240 / 640x480 / 1280x720 on 1, 2, 4 and 8
# threads, with the whole Preprocessor::run (full GR00T checkpoint); (2) groot_n16_cuda.yaml and
# pi05_cuda.yaml recorded 12 s with the preprocess node's `threads` at 1 and at its default (0:
# one per four cores, 4 there), alternated twice, and their bag reports; (3) the GPU suite.
# Predicted: the 320x240 frame 1.6-2.3 ms on one thread (run_2026-11-26), ~0.6-0.8 on 4; in the
# graph GR00T's preprocess 2.9 ms p50 (run 66) -> ~1.2-1.6, camera -> actuation 10.7 -> ~9.2-9.6;
# pi0.5 (two cameras side by side) 2.0 -> ~1.2-1.4, camera -> actuation 14.4 -> ~13.6-13.8.
exec > $OUT/run.log 2>&1
REPO=$PWD; R=/tmp/ra; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla; BP=/tmp/b/bin
date
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
(cd /tmp/b && timeout 260 ctest -L gpu -j6 --output-on-failure > $R/ctest_gpu.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|FAILED|Failed|\*\*\*" $R/ctest_gpu.log | head -20)
wait; date
$BP/edgevla_bench_groot_preprocess --sizes 320x240,640x480,1280x720 --threads 1,2,4,8 --repeat 100 --checkpoint /tmp/groot > $R/preprocess.jsonl 2> $R/preprocess.err
echo "preprocess bench rc=$?"
python3 -c "
import json
for l in open('$R/preprocess.jsonl'):
    d = json.loads(l)
    m = d['ms']
    print(d['width'], d['height'], 'threads', d.get('threads'), d.get('part', 'frame'), m.get('median', m.get('whole')), m.get('frames', ''))
"
for rep in 1 2; do
  for th in 1 0; do
    for f in groot_n16_cuda pi05_cuda; do
      CK=/tmp/pi05; [ $f = groot_n16_cuda ] && CK=/tmp/groot
      D=/tmp/run_${f}_${th}_${rep}; rm -rf $D
      EDGEVLA_CHECKPOINT=$CK EDGEVLA_RUN_DIR=$D timeout 70 $E launch launch/$f.yaml --duration 12 --set preprocess.threads=$th > $R/${f}_t${th}_${rep}.launch.txt 2>&1
      echo "$f threads=$th rep $rep rc=$?"
      $E bag report $D/$f.mcap > $R/${f}_t${th}_${rep}.report.txt 2>&1
      grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/${f}_t${th}_${rep}.report.txt
      grep -o "frames resized on [0-9]* thread(s)" $R/${f}_t${th}_${rep}.launch.txt | head -1
      rm -rf $D
    done
  done
done
date
