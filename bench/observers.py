#!/usr/bin/python3
"""Observers on a running multiprocess pi0.5 graph: does attaching them slow the robot?

Runs launch/pi05_multiprocess.yaml (backbone and action head in processes of their own) on a
seeded 18-layer checkpoint at tiny widths twice in the same run, --seconds each: alone, then
with two `edgevla topic echo` (on /policy/prefix and /policy/actions) and one
`edgevla bag record` of the prefixes, actions and images attached from other processes. From
`edgevla bag report` of the launch's own recording: chunks at actuation per second, watchdog
faults, drops. The figure is the ratio with / without (target: within 5 %, no watchdog hold).

  bench/observers.py [--seconds 20] [--depth 18] [--out bench/results/NAME]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from model_cpu import machine  # noqa: E402
from pipeline import run  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgevla", default=os.path.join(ROOT, "build", "bin", "edgevla"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--depth", type=int, default=18)
    ap.add_argument("--out")
    args = ap.parse_args()
    exe = args.edgevla

    rows = {}
    with tempfile.TemporaryDirectory(prefix="edgevla_observers_bench_") as work:
        base = os.path.join(work, "base")
        run([exe, "model", "init", "--config", "tiny", "--model", "pi05", "--out", base], os.environ)
        with open(os.path.join(base, "config.json")) as f:
            cfg = json.load(f)
        cfg["vlm"]["depth"] = cfg["expert"]["depth"] = args.depth
        cfg_path = os.path.join(work, "deep.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        ckpt = os.path.join(work, "deep")
        run([exe, "model", "init", "--config", cfg_path, "--seed", "7", "--out", ckpt], os.environ)
        for case in ("alone", "observed"):
            run_dir = os.path.join(work, case)
            os.makedirs(run_dir)
            env = dict(os.environ, EDGEVLA_CHECKPOINT=ckpt, EDGEVLA_RUN_DIR=run_dir,
                       EDGEVLA_DOMAIN=f"observers-{os.getpid()}-{case}")
            launch = subprocess.Popen([exe, "launch", "launch/pi05_multiprocess.yaml", "--duration",
                                       str(args.seconds), "--set", "actuation.execute_steps=5"],
                                      cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            observers = []
            if case == "observed":
                time.sleep(min(5.0, args.seconds / 4))  # attach to the running graph
                for topic in ("/policy/prefix", "/policy/actions"):
                    observers.append(subprocess.Popen([exe, "topic", "echo", topic], cwd=ROOT, env=env,
                                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                observers.append(subprocess.Popen(
                    [exe, "bag", "record", "-o", os.path.join(run_dir, "observer.mcap"), "--topics",
                     "/policy/prefix,/policy/actions,/camera/base/image"], cwd=ROOT, env=env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _, err = launch.communicate()
            for o in observers:
                o.terminate()
            for o in observers:
                o.wait(timeout=30)
            if case == "observed":
                info = run([exe, "bag", "info", os.path.join(run_dir, "observer.mcap")], env)
                line = [l for l in info.splitlines() if l.strip().startswith("/policy/prefix")]
                observer_prefixes = int(line[0].split()[3]) if line else 0
            if launch.returncode != 0:
                sys.exit(f"launch ({case}) failed ({launch.returncode}):\n{err[-3000:]}")
            report = os.path.join(run_dir, "report.json")
            run([exe, "bag", "report", os.path.join(run_dir, "pi05_multiprocess.mcap"), "--json", report], env)
            with open(report) as f:
                j = json.load(f)
            a = j.get("actuation", {})
            d = j["duration_s"]
            rows[case] = {"duration_s": round(d, 3), "chunks_at_actuation": a.get("chunks_received", 0),
                          "chunks_per_s": round(a.get("chunks_received", 0) / d, 3) if d > 0 else 0,
                          "watchdog_faults": a.get("watchdog_faults", 0),
                          "action_head_dropped": j["nodes"].get("action_head", {}).get("dropped", 0)}
            if case == "observed":
                rows[case]["prefixes_the_observer_recorded"] = observer_prefixes
            print(f"{case}: {rows[case]}", flush=True)
    ratio = rows["observed"]["chunks_per_s"] / rows["alone"]["chunks_per_s"] if rows["alone"]["chunks_per_s"] else None
    print(f"observed / alone chunk rate: {ratio:.3f}" if ratio else "no chunks alone", flush=True)
    result = {"bench": "observers", "machine": machine(), "seconds": args.seconds, "depth": args.depth,
              "rows": rows, "observed_over_alone": round(ratio, 3) if ratio else None}
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(result, f, indent=2)
        with open(args.out + ".md", "w") as f:
            m = result["machine"]
            f.write(f"# Observers on a running multiprocess pi0.5 graph\n\nMachine: {m['cpu']}, {m['cores']} cores, "
                    f"{m['memory_gb']} GB, Linux {m['kernel']}. `bench/observers.py --seconds {args.seconds} "
                    f"--depth {args.depth}`: launch/pi05_multiprocess.yaml alone, then with 2 `topic echo` "
                    "(/policy/prefix, /policy/actions) and 1 `bag record` (prefixes, actions, base images) attached, "
                    "in the same run (the observers attach a quarter into the run). The graph runs at the pace of "
                    "its 10 Hz camera (one observation in flight).\n\n"
                    "| case | chunks/s at actuation | watchdog faults | action head dropped | prefixes the observing "
                    "recorder got |\n|---|---:|---:|---:|---:|\n")
            for case, r in rows.items():
                f.write(f"| {case} | {r['chunks_per_s']} | {r['watchdog_faults']} | {r['action_head_dropped']} | "
                        f"{r.get('prefixes_the_observer_recorded', '-')} |\n")
            f.write(f"\nRatio observed / alone: {result['observed_over_alone']}\n")
        print(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
