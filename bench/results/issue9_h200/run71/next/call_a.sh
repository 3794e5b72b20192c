#!/bin/bash
# Prepared in run 71 (no device time left): the frame pipelines without their copies and zero
# fills (frame_copies.patch: GR00T's frames read through views, its intermediate frames not
# zero-filled, no copy before the bicubic passes; pi0 resizes the node's frame where it lies),
# against the code before (the patch reversed, libraries and the preprocess bench rebuilt beside),
# both arms from the same binaries through LD_LIBRARY_PATH, alternated twice; the GR00T frame
# bench on the host's CPU both ways. call_b.sh then runs the whole suite with its output.
# Predicted (2-core VM: frame -6 to -9 %): GR00T's stage 1.07-1.20 -> ~1.0-1.1 ms p50, camera ->
# actuation -0.05-0.1 ms; pi0.5 within the spread (its frames' copy was one 230 KB memcpy).
# ~7.5 min cold.
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
rm -rf /tmp/newlib /tmp/oldlib; cp -a /tmp/b/lib /tmp/newlib; cp /tmp/b/bin/edgevla_bench_groot_preprocess /tmp/bench_new
P=bench/results/issue9_h200/run71/next/frame_copies.patch
(git apply -R $P 2>/dev/null || patch -R -p1 < $P) && echo reversed
cmake --build /tmp/b --target edgevla_model edgevla_bench_groot_preprocess > $R/build_old.log 2>&1; echo "old build rc=$?"
cp -a /tmp/b/lib /tmp/oldlib; cp /tmp/b/bin/edgevla_bench_groot_preprocess /tmp/bench_old
(git apply $P 2>/dev/null || patch -p1 < $P) && echo reapplied
cmake --build /tmp/b --target edgevla_model edgevla_bench_groot_preprocess > $R/build_new_again.log 2>&1; echo "new rebuild rc=$?"
cmp -s /tmp/newlib/libedgevla_model.so /tmp/oldlib/libedgevla_model.so && echo "model lib SAME (bad)" || echo "model lib differs"
date
for r in 1 2; do
  for a in old new; do
    LD_LIBRARY_PATH=/tmp/${a}lib:$LD_LIBRARY_PATH /tmp/bench_$a --sizes 320x240,640x480,1280x720 --threads 1,4 --repeat 200 > $R/frame_${a}_$r.jsonl 2>&1
    LD_LIBRARY_PATH=/tmp/${a}lib:$LD_LIBRARY_PATH /tmp/bench_$a --sizes 320x240 --threads 1,4 --repeat 60 --period-ms 33 > $R/frame_cadence_${a}_$r.jsonl 2>&1
    echo "$a $r"; cat $R/frame_${a}_$r.jsonl $R/frame_cadence_${a}_$r.jsonl | cut -c1-170
  done
done
($E model init --family groot --config full --dtype bf16 --seed 0 --out /tmp/groot > /dev/null 2>&1; echo groot init rc=$?) &
($E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1; echo pi05 init rc=$?) &
wait
launch() {  # file tag checkpoint libdir
  local f=$1 tag=$2 D=/tmp/run_$2; rm -rf $D
  LD_LIBRARY_PATH=$4:$LD_LIBRARY_PATH EDGEVLA_CHECKPOINT=$3 EDGEVLA_RUN_DIR=$D timeout 40 $E launch launch/$f.yaml --duration 8 > $R/$tag.launch.txt 2>&1
  echo "$f ($tag) rc=$?"
  $E bag report $D/*.mcap > $R/$tag.report.txt 2>&1
  grep -E "^preprocess \(compute\)|camera -> actuation \(chunk|framework overhead" $R/$tag.report.txt
  rm -rf $D
}
for r in 1 2; do
  launch groot_n16_cuda g_old_$r /tmp/groot /tmp/oldlib
  launch groot_n16_cuda g_new_$r /tmp/groot /tmp/newlib
  launch pi05_cuda p_old_$r /tmp/pi05 /tmp/oldlib
  launch pi05_cuda p_new_$r /tmp/pi05 /tmp/newlib
done
date
# The whole suite with its output: call_b.sh (REMOTE.txt's form), in the next call.
