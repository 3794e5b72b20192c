#!/usr/bin/python3
"""Real-depth pi0.5 across processes: chunk rate at actuation, one process vs one per stage.

For each depth (18 = pi0.5's, 48) it generates a seeded pi0.5 checkpoint with that many
layers at tiny widths (so it runs on a CPU), then runs launch/pi05_demo.yaml (every stage in one
process, references handed over) and launch/pi05_multiprocess.yaml (backbone and action head
in processes of their own: the BackboneOutput with the K/V of every layer crosses in one
shared-memory block) for --seconds each, in the same run, and reads `edgevla bag report`:
chunks received at actuation per second, watchdog faults, drops. The ratio multi / one is the
figure (target: within 5 %).

  bench/multiprocess_depth.py [--seconds 20] [--depths 18,48] [--out bench/results/NAME]
"""

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from model_cpu import machine  # noqa: E402
from pipeline import run  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgevla", default=os.path.join(ROOT, "build", "bin", "edgevla"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--depths", default="18,48")
    ap.add_argument("--out")
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="edgevla_depth_bench_") as work:
        base = os.path.join(work, "base")
        run([args.edgevla, "model", "init", "--config", "tiny", "--model", "pi05", "--out", base], os.environ)
        with open(os.path.join(base, "config.json")) as f:
            cfg = json.load(f)
        for depth in (int(d) for d in args.depths.split(",")):
            cfg["vlm"]["depth"] = depth
            cfg["expert"]["depth"] = depth
            cfg_path = os.path.join(work, f"depth{depth}.json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            ckpt = os.path.join(work, f"pi05_depth{depth}")
            run([args.edgevla, "model", "init", "--config", cfg_path, "--seed", "7", "--out", ckpt], os.environ)
            row = {"depth": depth}
            for launch in ("pi05_demo", "pi05_multiprocess"):
                env = dict(os.environ, EDGEVLA_CHECKPOINT=ckpt, EDGEVLA_RUN_DIR=work,
                           EDGEVLA_DOMAIN=f"depth-{os.getpid()}-{depth}-{launch}")
                run([args.edgevla, "launch", f"launch/{launch}.yaml", "--duration", str(args.seconds),
                     "--set", "actuation.execute_steps=5"], env)
                report = os.path.join(work, f"{depth}_{launch}.json")
                run([args.edgevla, "bag", "report", os.path.join(work, f"{launch}.mcap"), "--json", report], env)
                with open(report) as f:
                    j = json.load(f)
                a = j.get("actuation", {})
                d = j["duration_s"]
                row[launch] = {"duration_s": round(d, 3), "chunks_at_actuation": a.get("chunks_received", 0),
                               "chunks_per_s": round(a.get("chunks_received", 0) / d, 3) if d > 0 else 0,
                               "watchdog_faults": a.get("watchdog_faults", 0),
                               "prefixes_recorded": j["messages"].get("BackboneOutput", 0),
                               "backbone_p50_ms": j["stages_ms"]["backbone"].get("p50", 0),
                               "action_head_p50_ms": j["stages_ms"]["action_head"].get("p50", 0)}
            one, multi = row["pi05_demo"]["chunks_per_s"], row["pi05_multiprocess"]["chunks_per_s"]
            row["multi_over_one"] = round(multi / one, 3) if one > 0 else None
            rows.append(row)
            print(f"depth {depth}: one process {one:.2f} chunks/s, one per stage {multi:.2f} chunks/s, "
                  f"ratio {row['multi_over_one']}; prefixes recorded {row['pi05_multiprocess']['prefixes_recorded']}, "
                  f"watchdog faults {row['pi05_multiprocess']['watchdog_faults']}", flush=True)

    result = {"bench": "multiprocess_depth", "machine": machine(), "seconds": args.seconds, "rows": rows}
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(result, f, indent=2)
        with open(args.out + ".md", "w") as f:
            m = result["machine"]
            f.write(f"# Real-depth pi0.5 across processes: chunk rate at actuation\n\nMachine: {m['cpu']}, "
                    f"{m['cores']} cores, {m['memory_gb']} GB, Linux {m['kernel']}. "
                    f"`bench/multiprocess_depth.py --seconds {args.seconds}`; tiny widths, seeded checkpoints; "
                    "both launches in the same run, recording on.\n\n"
                    "| depth | one process chunks/s | one per stage chunks/s | ratio | prefixes recorded (multi) "
                    "| watchdog faults (one / multi) | backbone p50 ms (one / multi) | action head p50 ms |\n"
                    "|---:|---:|---:|---:|---:|---:|---:|---:|\n")
            for r in rows:
                o, mu = r["pi05_demo"], r["pi05_multiprocess"]
                f.write(f"| {r['depth']} | {o['chunks_per_s']} | {mu['chunks_per_s']} | {r['multi_over_one']} | "
                        f"{mu['prefixes_recorded']} | {o['watchdog_faults']} / {mu['watchdog_faults']} | "
                        f"{o['backbone_p50_ms']:.1f} / {mu['backbone_p50_ms']:.1f} | "
                        f"{o['action_head_p50_ms']:.1f} / {mu['action_head_p50_ms']:.1f} |\n")
        print(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
