#!/bin/bash
# Run 71 call 3: the images written into the publisher's loans (loan_through.patch: the family
# normalises each view straight into the shared memory the backbone reads; before, the f32 image
# went heap vector -> heap tensor -> loan, two 1 MB copies at GR00T's 252x336). Call 2 put the
# graph's preprocess stage at ~0.3-0.4 ms over Preprocessor::run on this host.
# One build; the libraries before the change built incrementally with the patch reversed, both
# arms run from the same binaries through LD_LIBRARY_PATH, alternated twice (GR00T) / once
# (pi0.5). Also report_html_page, which failed in call 2's suite (not seen before), alone with
# its output, then beside a loaded host.
# Predicted: GR00T preprocess 1.38-1.41 -> ~1.15-1.25 ms p50, camera -> actuation -0.15-0.25 ms;
# pi0.5 (two 224x224 views, 0.6 MB each) -0.05-0.1.
exec > $OUT/run.log 2>&1
R=/tmp/rd; rm -rf $R; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
export CUDAARCHS=90
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { grep -B2 -A8 "error" $R/build.log | head -60; exit 1; }
. /tmp/edgevla-env.sh
E=/tmp/b/bin/edgevla
rm -rf /tmp/newlib /tmp/oldlib; cp -a /tmp/b/lib /tmp/newlib
(git apply -R bench/results/issue9_h200/run71/loan_through.patch 2>/dev/null || patch -R -p1 < bench/results/issue9_h200/run71/loan_through.patch) && echo reversed
cmake --build /tmp/b --target edgevla_model edgevla_nodes_shared > $R/build_old.log 2>&1; echo "old build rc=$?"
cp -a /tmp/b/lib /tmp/oldlib
for l in libedgevla_model.so libedgevla_nodes.so; do cmp -s /tmp/newlib/$l /tmp/oldlib/$l && echo "$l SAME (bad)" || echo "$l differs"; done
LD_LIBRARY_PATH=/tmp/newlib:$LD_LIBRARY_PATH ldd $E | grep edgevla_model
date
( cd /tmp/b && LD_LIBRARY_PATH=/tmp/newlib:$LD_LIBRARY_PATH ctest -R "^report_html_page$" --output-on-failure > $R/report_html_alone.log 2>&1; echo "report_html_page alone rc=$?"; tail -30 $R/report_html_alone.log | grep -E "FAIL|Passed|Failed" )
( cd /tmp/b && LD_LIBRARY_PATH=/tmp/newlib:$LD_LIBRARY_PATH timeout 150 ctest -j16 -R "^(report_html_page|Pi05Pipeline.*|Node\..*|LaunchFile\..*|groot_preprocessor_test|PreprocessNode.*|GrootPreprocessNode.*)$" --output-on-failure > $R/report_html_loaded.log 2>&1; echo "loaded rc=$?"; grep -E "tests passed|FAIL:|\(Failed\)" $R/report_html_loaded.log | head )
date
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
  launch groot_n16_cuda g_new_$r /tmp/groot /tmp/newlib
  launch groot_n16_cuda g_old_$r /tmp/groot /tmp/oldlib
done
launch pi05_cuda p_new_1 /tmp/pi05 /tmp/newlib
launch pi05_cuda p_old_1 /tmp/pi05 /tmp/oldlib
date
