#!/bin/bash
# Run 38, call 3 (~4 min): why the warpgroup attention kernel is slow (call 2: 81.7 µs against
# attn_bf16's 48.4 at three views, 95 TFLOP/s, correct). Nsight Compute's full set on one launch
# at three views, with the SASS source page (stall samples per instruction).
exec > $OUT/run.log 2>&1
R=/tmp/r3; mkdir -p $R
trap 'tar czf $OUT/results.tgz -C $R .' EXIT
date
export CUDAARCHS=90; bash .debs/build.sh . /tmp/b -DEDGEVLA_BUILD_TESTS=OFF > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
K=/tmp/b/bin/edgevla_bench_cuda_kernels
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 200 $NCU --set full --import-source yes --kernel-name regex:attn_wg256 --launch-count 1 -o $R/wg3 -f \
  $K --only attention_shapes --shape pi05_prefix_3view --split wg --repeat 3 > $R/ncu_run.txt 2>&1
echo "ncu rc=$?"; tail -5 $R/ncu_run.txt
$NCU -i $R/wg3.ncu-rep --page details --print-details all > $R/details.txt 2>&1
grep -E "Duration|Throughput|Stall|stall|Issued Warp|No Eligible|Warp Cycles|Bank|Conflict|Wavefronts|Shared|Registers" $R/details.txt | head -80
$NCU -i $R/wg3.ncu-rep --page source --csv --print-source sass > $R/source.csv 2>&1
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
