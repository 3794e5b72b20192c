#!/usr/bin/python3
"""GR00T N1.6 CPU latency: edgevla's CPU backend against PyTorch (bench/torch_groot.py, eager
fp32) on the same generated checkpoint, views, image size, instruction, steps and threads,
alternating the two `--rounds` times in one run; medians and the ratio PyTorch / edgevla.

  bench/groot_cpu.py [--config small] [--views 1,2] [--threads 2] [--repeat 20] [--rounds 2]
                     [--out bench/results/NAME]   (writes NAME.json and NAME.md)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--config", default="small")
    ap.add_argument("--views", default="1,2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    rows = {}
    with tempfile.TemporaryDirectory(prefix="edgevla_groot_cpu_") as work:
        ck = os.path.join(work, args.config)
        run([os.path.join(args.build, "bin", "edgevla"), "model", "init", "--family", "groot", "--config", args.config,
             "--dtype", "f32", "--seed", "1", "--out", ck])
        for _ in range(args.rounds):
            out = run([os.path.join(args.build, "bin", "edgevla_bench_groot_cpu"), "--checkpoint", ck, "--views",
                       args.views, "--threads", str(args.threads), "--repeat", str(args.repeat), "--warmup", "2"], env)
            for line in out.splitlines():
                j = json.loads(line)
                rows.setdefault(j["views"], {"tokens": j["tokens"], "edgevla": [], "torch": []})["edgevla"].append(j)
            out = run([PY, os.path.join(ROOT, "bench", "torch_groot.py"), "--checkpoint", ck, "--device", "cpu",
                       "--threads", str(args.threads), "--dtype", "f32", "--variants", "eager", "--views", args.views,
                       "--repeat", str(args.repeat), "--warmup", "2", "--embodiment", "gr1"], env)
            for line in out.splitlines():
                if not line.startswith("{"):
                    continue
                j = json.loads(line)
                e = j["variants"]["eager"]
                rows[j["views"]]["torch"].append({"e2e_ms": e["e2e_ms"]["median"], "backbone_ms": e["backbone_ms"]["median"],
                                                  "head_ms": e["head_ms"]["median"], "tokens": j["tokens"]})
    result = []
    for views, r in sorted(rows.items()):
        assert all(t["tokens"] == r["tokens"] for t in r["torch"]), "token counts differ between the two benches"
        row = {"views": views, "tokens": r["tokens"], "threads": args.threads, "config": args.config}
        for impl in ("edgevla", "torch"):
            for k in ("e2e_ms", "backbone_ms", "head_ms"):
                row[f"{impl}_{k}"] = [round(x[k], 2) for x in r[impl]]
        row["ratio_e2e"] = [round(t / e, 2) for t, e in zip(row["torch_e2e_ms"], row["edgevla_e2e_ms"])]
        result.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        machine = rows and next(iter(rows.values()))["edgevla"][0]["machine"]
        with open(args.out + ".json", "w") as f:
            json.dump({"bench": "groot_cpu", "machine": machine, "rows": result}, f, indent=2)
        with open(args.out + ".md", "w") as f:
            f.write(f"# GR00T N1.6 on the CPU: edgevla vs PyTorch {args.config} config\n\n"
                    f"Machine: {machine}. {args.threads} threads for both, fp32 weights (`edgevla model init "
                    f"--family groot --config {args.config} --dtype f32`), 256x256 frames, 4 steps, median of "
                    f"{args.repeat} runs after 2 warm-ups, {args.rounds} rounds alternating (`bench/groot_cpu.py`).\n\n"
                    "| views | tokens | stage | edgevla ms (per round) | PyTorch ms (per round) |\n|---|---:|---|---|---|\n")
            for r in result:
                for k, name in (("e2e_ms", "end to end"), ("backbone_ms", "backbone"), ("head_ms", "action head")):
                    f.write(f"| {r['views']} | {r['tokens']} | {name} | {' / '.join(map(str, r['edgevla_' + k]))} | "
                            f"{' / '.join(map(str, r['torch_' + k]))} |\n")
            f.write("\nPyTorch / edgevla end to end, per round: " +
                    "; ".join(f"{r['views']} view(s) {' / '.join(map(str, r['ratio_e2e']))}x" for r in result) + "\n")


if __name__ == "__main__":
    main()
