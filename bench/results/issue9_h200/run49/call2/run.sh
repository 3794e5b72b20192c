#!/bin/bash
# Prepared in run 48 (~4 min): what paces the prefix attention's default form (the warpgroup kernel,
# one group, K and V by bulk tensor copies) at three views: 33.6 µs, 230 TFLOP/s, ~28 % of a
# multiprocessor's warpgroup rate. Neither a second warpgroup in the block (run 39) nor a second
# block on the multiprocessor (run 48 call 7) was faster, so something the multiprocessor shares
# is the limit, or a serial chain both forms keep. Nsight Compute's full set on one launch, with
# the SASS source page (stall samples per instruction), as run 38 call 3 did for the cp.async form.
# Read: tensor pipe active, shared-memory wavefronts and bank conflicts (wgmma operand reads), L2
# and TMA throughput, and where the stall samples sit (the mbarrier waits, wgmma waits, BAR.SYNC).
exec > $OUT/run.log 2>&1
R=/tmp/rb; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 200 $NCU --set full --import-source yes --kernel-name regex:attn_wg256 --launch-count 1 -o $R/wgt3 -f \
  $K --only attention_shapes --shape pi05_prefix_3view --split wgt1 --repeat 3 > $R/ncu_run.txt 2>&1
echo "ncu rc=$?"; tail -5 $R/ncu_run.txt
$NCU -i $R/wgt3.ncu-rep --page details --print-details all > $R/details.txt 2>&1
grep -E "Duration|Throughput|Stall|stall|Issued Warp|No Eligible|Warp Cycles|Bank|Conflict|Wavefronts|Shared|Registers|Tensor|Pipe" $R/details.txt | head -100
$NCU -i $R/wgt3.ncu-rep --page source --csv --print-source sass > $R/source.csv 2>&1
echo "source rc=$? lines $(wc -l < $R/source.csv)"
python3 - $R/source.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr_i = next(i for i, r in enumerate(rows) if any("Source" == c for c in r))
hdr = rows[hdr_i]; print(hdr[:40])
def col(name):
    for i, c in enumerate(hdr):
        if c.startswith(name): return i
    return None
si = col("Warp Stall Sampling (All"); src = col("Source")
data = rows[hdr_i + 1:]
def num(x):
    try: return float(x.replace(",", ""))
    except: return 0.0
tot = sum(num(r[si]) for r in data if len(r) > si)
top = sorted(data, key=lambda r: -num(r[si]) if len(r) > si else 0)[:40]
for r in top: print(f"{num(r[si]) / max(tot, 1) * 100:5.1f}%  {r[src][:110]}")
PY
date
