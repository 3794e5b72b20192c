#!/usr/bin/env python3
"""pi0 / pi0.5's resize with padding: edgevla (both forms of its horizontal pass) against PIL, same run.

Runs edgevla_bench_pi0_resize (the C++ resizer, one thread, rgb8 frames: the AVX2 shuffle form
and the pixel-at-a-time form alternated in one process) and then
tests/reference/preprocess_ref.py's resize_with_pad (PIL's bilinear resize and paste, the
reference the tests hold edgevla to byte for byte) on frames of the same sizes, and prints one
JSON line per size with every median and the ratios.

  bench/pi0_resize.py --bin build/bin/edgevla_bench_pi0_resize \\
      [--sizes 320x240,640x480,1280x720] [--repeat 200] [--json OUT.jsonl]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from machine_name import machine

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="edgevla_bench_pi0_resize")
    ap.add_argument("--sizes", default="320x240,640x480,1280x720")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--json", help="append the lines to this file")
    a = ap.parse_args()

    import numpy as np
    import preprocess_ref

    out = subprocess.run([a.bin, "--sizes", a.sizes, "--encodings", "rgb8", "--size", str(a.size), "--repeat",
                          str(a.repeat)], check=True, capture_output=True, text=True).stdout
    ours = {}
    for j in map(json.loads, out.splitlines()):
        ours.setdefault((j["width"], j["height"]), {})[j["form"]] = j["ms"]
    lines = []
    for s in a.sizes.split(","):
        w, h = map(int, s.split("x"))
        frame = np.random.RandomState(w * h).randint(0, 256, size=(h, w, 3), dtype=np.uint8)
        times = []
        for _ in range(a.repeat + 3):
            t0 = time.perf_counter()
            preprocess_ref.resize_with_pad(frame, a.size)
            times.append((time.perf_counter() - t0) * 1e3)
        times = sorted(times[3:])
        pil_ms = times[len(times) // 2]
        e = ours[(w, h)]
        line = {"bench": "pi0_resize", "machine": machine(), "width": w, "height": h, "size": a.size,
                "edgevla_ms": e, "pil_ms": {"median": round(pil_ms, 4), "runs": a.repeat}}
        for form, ms in e.items():
            line[f"{form}_vs_pil"] = round(pil_ms / ms["median"], 2)
        print(json.dumps(line), flush=True)
        lines.append(line)
    if a.json:
        with open(a.json, "a") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
