#!/bin/bash
# Session 2026-11-26d call 11: where the action expert's attention kernel stalls, line by line
# (Nsight Compute's source page with warp-state sampling, the engine's own launch).
exec > $OUT/run.log 2>&1
REPO=$PWD
R=/tmp/r11; mkdir -p $R
finish() { cp $REPO/.repro/s7call11.sh $R/; tar czf $OUT/results_s7c11.tgz -C $R . ; }
trap finish EXIT
date
bash .debs/build.sh . /tmp/b > $R/build.log 2>&1 || { tail -60 $R/build.log; exit 1; }
. /tmp/edgevla-env.sh
[ -f /tmp/pi05/config.json ] || /tmp/b/bin/edgevla model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > $R/init.log 2>&1
date
BENCH="/tmp/b/bin/edgevla_bench_cuda_pi0 --checkpoint /tmp/pi05 --views 1 --repeat 3 --warmup 2 --profile-last 1"
timeout 200 ncu --profile-from-start off --kernel-name regex:attn_bf16 --launch-skip 60 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy \
  --import-source yes --page source --csv --print-source cuda $BENCH > $R/ncu_attn_source_cuda.csv 2> $R/ncu1.err; echo ncu1 rc=$?
timeout 200 ncu --profile-from-start off --kernel-name regex:attn_bf16 --launch-skip 60 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy $BENCH > $R/ncu_attn_details.txt 2> $R/ncu2.err; echo ncu2 rc=$?
grep -E "Duration|Grid Size|Block Size|Registers|Warp Cycles|Stall|stall|Achieved Occ" $R/ncu_attn_details.txt | head -30
python3 - $R/ncu_attn_source_cuda.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = None
for i, r in enumerate(rows):
    if r and r[0] in ("#", "Line", "# Line") or (len(r) > 2 and "Source" in r):
        hdr = i; break
if hdr is None:
    print("no header; first rows:", rows[:5]); sys.exit()
h = rows[hdr]; print(h[:12])
key = None
for cand in ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)", "Sampling Data (All)"):
    if cand in h: key = h.index(cand); break
if key is None:
    print("no sampling column"); sys.exit()
data = [r for r in rows[hdr + 1:] if len(r) > key]
def num(x):
    try: return float(x.replace(",", ""))
    except: return 0.0
tot = sum(num(r[key]) for r in data) or 1
for r in sorted(data, key=lambda r: -num(r[key]))[:25]:
    print(f"{num(r[key]) / tot * 100:5.1f}%  line {r[0]}: {r[1][:110] if len(r) > 1 else ''}")
PY
date
