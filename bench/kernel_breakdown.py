#!/usr/bin/env python3
"""Where a stage's device time goes, kernel by kernel, from Nsight Compute's CSV.

Each stage is profiled on its own (ncu --nvtx-include "<range>/" --graph-profiling node
--metrics gpu__time_duration.sum --csv --log-file F): edgevla's engines mark each run with an
NVTX range "edgevla.<family>.<stage>" and the PyTorch benches with --profile-ranges mark
"torch.<variant>.<stage>". ncu runs every kernel alone, so the sum is the kernels' own time;
the stage's graph replay (measured beside it) minus that sum is what the launches and the gaps
between kernels cost.

  kernel_breakdown.py NAME=FILE.csv[.gz] [NAME=FILE.csv ...] [--replay-ms NAME=MS ...] [--top 12]
                      [--split-ranges] [--json OUT]

With --split-ranges, one file profiled over several stages (ncu --nvtx without a filter) is
split by each kernel's innermost NVTX range, as NAME/<range>.
"""
import argparse
import csv
import gzip
import json
import re
import sys
from collections import defaultdict

# First match wins. Kernel names: cuBLASLt (nvjet_*, sm90_xmma_*, cutlass*), edgevla's own
# (edgevla::backends::cuda::...), torch.compile's Triton kernels (triton_{poi,per,red}_fused_*),
# PyTorch's own (at::native::*, flash / cudnn / efficient attention).
CATEGORIES = [
    # edgevla's heads kernel: a head's projections and its attention in one launch.
    ("projection+attention", r"heads_kernel"),
    ("attention", r"attention|attn|flash|fmha|sdpa|softmax|cudnn"),
    ("gemm", r"nvjet|gemm|xmma|cutlass|cublas|skinny|Kernel2|splitKreduce|_mm_|wgmma"),
    ("norm", r"norm|rms_|rsqrt|triton_per_|triton_red_"),
    ("elementwise", r"triton_poi_|elementwise|vectorized|unrolled|rope|glu|gelu|silu|convert|copy|add|euler|bias|gather|embed|patch|im2col|unshuffle|transpose|nonfinite"),
]


def category(name):
    for cat, pattern in CATEGORIES:
        if re.search(pattern, name, re.IGNORECASE):
            return cat
    return "other"


def short(name, width=90):
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"edgevla::(backends::cuda::)?(<unnamed>::|\(anonymous namespace\)::)?", "edgevla::", name)
    name = re.sub(r"\(.*$", "", name)  # the parameter list
    if not name.startswith("edgevla::"):
        name = re.sub(r"<.*", "<…>", name)
    return name if len(name) <= width else name[: width - 1] + "…"


def innermost_range(cell):
    """The innermost push/pop NVTX range in ncu's "thread Domain:Push/Pop_Range..." column
    (e.g. '9944  "<default domain>:edgevla.groot.backbone:none:..."'), or ''."""
    names = re.findall(r'<default domain>:([^:"]+)', cell or "") or re.findall(r'"[^":]*:([^:"]+)', cell or "")
    return names[-1] if names else ""


def read_ncu_csv(path, with_ranges=False):
    """-> list of (kernel name, duration in µs), in launch order; with_ranges: (name, µs, range)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return []
    head = rows[0]
    ri = next((i for i, c in enumerate(head) if "Push/Pop_Range" in c), None)
    out = []
    if "Metric Name" in head:
        ki, mi, ui, vi = (head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value"))
        for r in rows[1:]:
            if len(r) <= vi or r[mi] != "gpu__time_duration.sum":
                continue
            out.append((r[ki], to_us(r[vi], r[ui]), innermost_range(r[ri]) if ri is not None else ""))
    else:
        ki = head.index("Kernel Name")
        vi = head.index("gpu__time_duration.sum")
        unit = rows[1][vi] if len(rows) > 1 and not re.match(r"^[\d.,]+$", rows[1][vi]) else "ns"
        for r in rows[1:]:
            if len(r) <= vi or not re.match(r"^[\d.,]+$", r[vi]):
                continue
            out.append((r[ki], to_us(r[vi], unit), innermost_range(r[ri]) if ri is not None else ""))
    return out if with_ranges else [(n, us) for n, us, _ in out]


def to_us(value, unit):
    v = float(value.replace(",", ""))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "s": 1e6,
             "second": 1e6}.get(unit.strip(), 1e-3)
    return v * scale


def summarise(kernels, top):
    cats = defaultdict(lambda: [0, 0.0])
    per = defaultdict(lambda: [0, 0.0])
    for name, us in kernels:
        c = cats[category(name)]
        c[0] += 1
        c[1] += us
        p = per[short(name)]
        p[0] += 1
        p[1] += us
    total = sum(us for _, us in kernels)
    return {
        "kernels": len(kernels),
        "kernel_us": round(total, 1),
        "categories": {k: {"count": v[0], "us": round(v[1], 1)} for k, v in sorted(cats.items(), key=lambda kv: -kv[1][1])},
        "top": [{"kernel": k, "count": v[0], "us": round(v[1], 1), "us_each": round(v[1] / v[0], 2)}
                for k, v in sorted(per.items(), key=lambda kv: -kv[1][1])[:top]],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="NAME=ncu.csv")
    ap.add_argument("--replay-ms", nargs="*", default=[], help="NAME=MS: the stage's graph replay, measured")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--split-ranges", action="store_true",
                    help="split each file by its kernels' NVTX range: NAME/<range> (one ncu run over several stages)")
    ap.add_argument("--json", help="write the summaries here")
    a = ap.parse_args(argv)
    replay = {}
    for item in a.replay_ms:
        k, v = item.split("=", 1)
        replay[k] = float(v)
    groups = []
    for item in a.inputs:
        name, path = item.split("=", 1)
        if not a.split_ranges:
            groups.append((name, read_ncu_csv(path)))
            continue
        by_range = {}
        for kname, us, rng in read_ncu_csv(path, with_ranges=True):
            by_range.setdefault(f"{name}/{rng or '(no range)'}", []).append((kname, us))
        groups.extend(by_range.items())
    result = {}
    for name, kernels in groups:
        s = summarise(kernels, a.top)
        if name in replay:
            s["replay_us"] = round(1e3 * replay[name], 1)
            s["between_kernels_us"] = round(s["replay_us"] - s["kernel_us"], 1)
        result[name] = s
        print(f"== {name}: {s['kernels']} kernels, {s['kernel_us']:.0f} µs of kernel time"
              + (f", replay {s['replay_us']:.0f} µs (launch and gaps {s['between_kernels_us']:.0f} µs)"
                 if "replay_us" in s else ""))
        for cat, v in s["categories"].items():
            print(f"   {cat:12s} {v['count']:6d} kernels {v['us']:9.1f} µs")
        for t in s["top"]:
            print(f"   {t['us']:9.1f} µs {t['count']:5d} × {t['us_each']:7.2f}  {t['kernel']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main())
