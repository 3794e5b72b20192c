#!/usr/bin/python3
"""Per-stage CPU latency of pi0 / pi0.5: edgevla's CPU backend against PyTorch and NumPy.

For each config (tiny, small) and variant (pi0, pi0.5) it generates a seeded checkpoint,
writes one set of inputs (`edgevla model forward --out`: images with one camera masked, a
prompt, state, noise), and times on those same inputs, with the same thread count:
  - edgevla: `edgevla model forward --repeat` (first run dropped as warm-up, last one dropped
    because it also collects diagnostics),
  - PyTorch: bench/torch_pi0.py (Debian's python3-torch, eager fp32, fused projections),
  - NumPy:   tests/reference/pi0_numpy.py --skip-masked (the reference, OpenBLAS matmuls).
Backbone = vision tower + projector + prefix pass; action head = the expert's Euler loop.
Every run's median is reported with the ratio baseline / edgevla (> 1: edgevla is faster).

  bench/model_cpu.py [--threads 2] [--repeat 7] [--configs tiny,small] [--out bench/results/NAME]
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

from machine_name import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"  # Debian's, with python3-numpy and python3-torch


def machine():
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def edgevla_times(exe, ckpt, io, threads, repeat):
    out = run([exe, "model", "forward", "--checkpoint", ckpt, "--inputs", io, "--out", io + ".edgevla",
               "--threads", str(threads), "--repeat", str(repeat + 2)])
    runs = re.findall(r"run (\d+): backbone ([0-9.]+) ms, action head ([0-9.]+) ms", out)
    timed = runs[1:-1]  # first: warm-up; last: with diagnostics
    bb = statistics.median(float(r[1]) for r in timed)
    hd = statistics.median(float(r[2]) for r in timed)
    return {"backbone_ms": bb, "action_head_ms": hd, "total_ms": bb + hd, "runs": len(timed)}


def python_times(script_args, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    line = run([PY] + script_args, env=env).strip().splitlines()[-1]
    j = json.loads(line)
    bb = j["vision_ms"] + j["prefix_ms"]
    return {"backbone_ms": bb, "action_head_ms": j["action_head_ms"], "total_ms": j["total_ms"],
            "runs": j["repeat"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgevla", default=os.path.join(ROOT, "build", "bin", "edgevla"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--configs", default="tiny,small")
    ap.add_argument("--variants", default="pi05,pi0")
    ap.add_argument("--no-numpy", action="store_true", help="skip the (slow) NumPy reference")
    ap.add_argument("--out", help="write OUT.json and OUT.md")
    args = ap.parse_args()

    try:
        subprocess.run([PY, "-c", "import torch"], check=True, capture_output=True)
        have_torch = True
    except subprocess.CalledProcessError:
        have_torch = False
        print("python3-torch is not installed: PyTorch baseline skipped (apt-get install python3-torch)",
              file=sys.stderr)

    rows = []
    with tempfile.TemporaryDirectory(prefix="edgevla_model_bench_") as work:
        for config in args.configs.split(","):
            for variant in args.variants.split(","):
                ckpt = os.path.join(work, f"{config}_{variant}")
                run([args.edgevla, "model", "init", "--config", config, "--model", variant, "--seed", "1",
                     "--out", ckpt])
                io = os.path.join(work, f"{config}_{variant}_io.safetensors")
                # One camera of three masked, 16 prompt tokens: what a two-camera robot sends.
                run([args.edgevla, "model", "forward", "--checkpoint", ckpt, "--seed", "2", "--masked", "2",
                     "--prompt-tokens", "16", "--out", io])
                row = {"config": config, "model": variant, "threads": args.threads,
                       "edgevla": edgevla_times(args.edgevla, ckpt, io, args.threads, args.repeat)}
                if have_torch:
                    row["torch"] = python_times([os.path.join(ROOT, "bench", "torch_pi0.py"), "--checkpoint", ckpt,
                                                 "--inputs", io, "--threads", str(args.threads),
                                                 "--repeat", str(args.repeat), "--warmup", "1"], args.threads)
                if not args.no_numpy:
                    row["numpy"] = python_times([os.path.join(ROOT, "tests", "reference", "pi0_numpy.py"),
                                                 "--checkpoint", ckpt, "--inputs", io, "--time", "--skip-masked",
                                                 "--threads", str(args.threads), "--repeat", str(args.repeat),
                                                 "--warmup", "1"], args.threads)
                for base in ("torch", "numpy"):
                    if base in row:
                        row[f"{base}_over_edgevla"] = {
                            k: round(row[base][k] / row["edgevla"][k], 2)
                            for k in ("backbone_ms", "action_head_ms", "total_ms")}
                rows.append(row)
                print(json.dumps(row), flush=True)

    result = {"bench": "model_cpu", "machine": machine(), "threads": args.threads, "repeat": args.repeat,
              "rows": rows}
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(result, f, indent=2)
        with open(args.out + ".md", "w") as f:
            m = result["machine"]
            f.write(f"# Per-stage CPU latency: edgevla vs PyTorch vs NumPy\n\n"
                    f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Linux {m['kernel']}. "
                    f"Threads: {args.threads} for every implementation. Median of {args.repeat} runs after "
                    f"one warm-up, same inputs (one of three cameras masked, 16 prompt tokens, 10 Euler steps), "
                    f"fp32 weights. `bench/model_cpu.py`.\n\n"
                    "| config | model | stage | edgevla ms | PyTorch ms | NumPy ms | PyTorch / edgevla | NumPy / edgevla |\n"
                    "|---|---|---|---:|---:|---:|---:|---:|\n")
            for r in rows:
                for k, name in (("backbone_ms", "backbone"), ("action_head_ms", "action head"), ("total_ms", "total")):
                    t = r.get("torch", {}).get(k)
                    n = r.get("numpy", {}).get(k)
                    f.write(f"| {r['config']} | {r['model']} | {name} | {r['edgevla'][k]:.1f} | "
                            f"{'-' if t is None else f'{t:.1f}'} | {'-' if n is None else f'{n:.1f}'} | "
                            f"{'-' if t is None else r['torch_over_edgevla'][k]} | "
                            f"{'-' if n is None else r['numpy_over_edgevla'][k]} |\n")
        print(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
