#!/usr/bin/env python3
"""GR00T N1.6 per-frame preprocessing: edgevla against the NumPy reference, same run.

Runs edgevla_bench_groot_preprocess (the C++ frame pipeline, one thread) and then
tests/reference/groot/image_ref.py's preprocess_frame + normalize_pixels on frames of the same
sizes (random content: the pipeline does the same work whatever the pixels), and prints one
JSON line per size with both medians and the ratio.

  bench/groot_preprocess.py --bin build/bin/edgevla_bench_groot_preprocess \
      [--sizes 320x240,640x480,1280x720] [--repeat 50] [--json OUT.jsonl]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from machine_name import machine

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference", "groot"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="edgevla_bench_groot_preprocess")
    ap.add_argument("--sizes", default="320x240,640x480,1280x720")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--numpy-repeat", type=int, default=5, help="runs of the (slow) NumPy reference per size")
    ap.add_argument("--json", help="append the lines to this file")
    a = ap.parse_args()

    import numpy as np
    import image_ref

    out = subprocess.run([a.bin, "--sizes", a.sizes, "--repeat", str(a.repeat)], check=True,
                         capture_output=True, text=True).stdout
    ours = {(j["width"], j["height"]): j for j in map(json.loads, out.splitlines())}
    lines = []
    for s in a.sizes.split(","):
        w, h = map(int, s.split("x"))
        frame = np.random.RandomState(w * h).randint(0, 256, size=(h, w, 3), dtype=np.uint8)
        times = []
        for _ in range(a.numpy_repeat + 1):
            t0 = time.perf_counter()
            f, _ = image_ref.preprocess_frame(frame)
            image_ref.normalize_pixels(f)
            times.append((time.perf_counter() - t0) * 1e3)
        times = sorted(times[1:])
        ref_ms = times[len(times) // 2]
        e = ours[(w, h)]
        line = {"bench": "groot_preprocess", "machine": machine(), "width": w, "height": h, "out": e["out"],
                "edgevla_ms": e["ms"], "numpy_reference_ms": {"median": round(ref_ms, 3), "runs": a.numpy_repeat},
                "speedup_vs_numpy": round(ref_ms / e["ms"]["median"], 1)}
        print(json.dumps(line), flush=True)
        lines.append(line)
    if a.json:
        with open(a.json, "a") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
