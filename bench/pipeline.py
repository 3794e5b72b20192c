#!/usr/bin/python3
"""The pi0.5 pipeline end to end: framework overhead and memory, from recorded runs.

For each config (tiny, small) it generates a seeded pi0.5 checkpoint, runs
launch/pi05_demo.yaml (five stages in one process) and launch/pi05_multiprocess.yaml (one
process per heavy stage) for --seconds each, and reads `edgevla bag report --json` of each
recording:
  - framework overhead per chunk = camera->actuation latency minus the stages' own compute
    (camera, preprocess, backbone, action_head), split into the four bus deliveries
    (publish -> the next stage's callback start) and the work in the nodes outside compute,
  - peak RSS of the policy's processes (the recorder's excluded) against the size of
    model.safetensors.
The baseline for the deliveries is the bus's own same-process hop (bench/results/bus_latency*).

  bench/pipeline.py [--seconds 15] [--configs tiny,small] [--launches pi05_demo,pi05_multiprocess]
                    [--upstream-spin-us N] [--checkpoint DIR] [--out bench/results/NAME]

--checkpoint DIR runs every launch file on that checkpoint instead (config "given"), e.g. the
full-size bf16 one with --launches pi05_cuda,pi05_cuda_multiprocess on a GPU machine.

--upstream-spin-us runs each launch file with `upstream_spin_us: 0` and a second time with
`upstream_spin_us: N` on every group (executors spin while a stage upstream in their process
runs), labelled "+spin".
"""

import argparse
import resource
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from model_cpu import machine  # noqa: E402


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def with_upstream_spin(launch, spin_us, work):
    """A copy of launch/<launch>.yaml whose every group spins `spin_us` for upstream work."""
    import yaml  # python3-yaml; only this option needs it

    src = os.path.join(ROOT, "launch", launch + ".yaml")
    with open(src) as f:
        doc = yaml.safe_load(f)
    here = os.path.dirname(src)
    for key in ("params_files", "include", "plugins"):
        if key in doc:
            doc[key] = [os.path.normpath(os.path.join(here, p)) for p in doc[key]]
    if "nodes" in doc:
        doc.setdefault("groups", []).append({"name": "main", "nodes": doc.pop("nodes")})
    for g in doc.get("groups", []):
        g["upstream_spin_us"] = spin_us
        for n in g["nodes"]:
            if "params_files" in n:
                n["params_files"] = [os.path.normpath(os.path.join(here, p)) for p in n["params_files"]]
    out = os.path.join(work, f"{launch}_spin{spin_us}.yaml")
    with open(out, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return out


# The stages whose input subscription `edgevla node info` is read near the end of each run.
INFO_NODES = ("preprocess", "backbone", "action_head", "actuation")


def node_infos(edgevla, env):
    """Per stage: its input subscriptions' delay split (from other processes: transport = publish ->
    taken from the ring, hand-off = taken -> callback start) and its upstream-spin counts."""
    import yaml  # python3-yaml

    out = {}
    for node in INFO_NODES:
        r = subprocess.run([edgevla, "node", "info", node], capture_output=True, text=True, env=env, cwd=ROOT)
        if r.returncode != 0:
            continue
        doc = yaml.safe_load(r.stdout.split("\n", 1)[1]) or {}
        subs = {}
        for cb in doc.get("callbacks", []):
            if cb.get("kind") != "subscription" or not cb.get("count"):
                continue
            subs[cb["name"]] = {k: cb[k] for k in ("count", "delay_p50_us", "remote", "transport_p50_us",
                                                   "handoff_p50_us") if k in cb}
        out[node] = {"subscriptions": subs, "upstream_spin": doc.get("upstream_spin")}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgevla", default=os.path.join(ROOT, "build", "bin", "edgevla"))
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--configs", default="tiny,small")
    ap.add_argument("--launches", default="pi05_demo,pi05_multiprocess")
    ap.add_argument("--upstream-spin-us", type=int, default=0)
    ap.add_argument("--checkpoint", help="run on this pi0.5 checkpoint (labelled 'given') instead of generating "
                    "one per --configs entry, e.g. a full-size bf16 one for the cuda launch files")
    ap.add_argument("--out")
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="edgevla_pipeline_bench_") as work:
        for config in ["given"] if args.checkpoint else args.configs.split(","):
            ckpt = args.checkpoint or os.path.join(work, f"{config}_pi05")
            if not args.checkpoint:
                run([args.edgevla, "model", "init", "--config", config, "--model", "pi05", "--seed", "7", "--out",
                     ckpt], os.environ)
            runs = [(launch, f"launch/{launch}.yaml") for launch in args.launches.split(",")]
            if args.upstream_spin_us > 0:
                # The plain rows without spinning, whatever the launch file sets.
                runs = [(launch, with_upstream_spin(launch, 0, work)) for launch in args.launches.split(",")]
                runs += [(launch + "+spin", with_upstream_spin(launch, args.upstream_spin_us, work))
                         for launch in args.launches.split(",")]
            for label, launch_file in runs:
                launch = label.split("+")[0]
                env = dict(os.environ, EDGEVLA_CHECKPOINT=ckpt, EDGEVLA_RUN_DIR=work,
                           EDGEVLA_DOMAIN=f"bench-{os.getpid()}-{config}-{label.replace('+', '-')}")
                sets = ["--set", "actuation.execute_steps=5"] if config == "tiny" else []
                # The graph runs for --seconds; each stage's `node info` is read 2 s before its end.
                cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
                proc = subprocess.Popen([args.edgevla, "launch", launch_file, "--duration", str(args.seconds)] + sets,
                                        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                infos = {}
                try:
                    proc.wait(timeout=max(args.seconds - 2, 1))
                except subprocess.TimeoutExpired:
                    infos = node_infos(args.edgevla, env)
                out, err = proc.communicate()
                cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
                # The launch's processes (reaped, so counted) over the run: cores kept busy.
                cpu_s = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
                if proc.returncode != 0:
                    sys.exit(f"launch {launch_file} failed ({proc.returncode}):\n{err[-3000:]}")
                report = os.path.join(work, f"{config}_{label}.json")
                run([args.edgevla, "bag", "report", os.path.join(work, f"{launch}.mcap"), "--json", report,
                     "--checkpoint", ckpt], env)
                with open(report) as f:
                    j = json.load(f)
                row = {"config": config, "launch": label, "chunks": j["messages"].get("ActionChunk", 0),
                       "stages_ms": j["stages_ms"], "latency_ms": j["latency_ms"], "overhead_ms": j["overhead_ms"],
                       "graph_peak_rss_bytes": j["graph_peak_rss_bytes"], "checkpoint_bytes": j["checkpoint_bytes"],
                       "peak_rss_over_checkpoint": round(j["peak_rss_over_checkpoint"], 3),
                       "nodes": {n: {k: v[k] for k in ("memory_bytes", "process_peak_rss_bytes", "dropped",
                                                         "bad_inputs")}
                                 for n, v in j["nodes"].items()},
                       "node_info": infos, "cpu_seconds": round(cpu_s, 2),
                       "cpu_cores_busy": round(cpu_s / args.seconds, 2)}
                rows.append(row)
                o = row["latency_ms"]
                print(f"{config} {label}: camera->actuation p50 {o['camera_to_actuation'].get('p50', 0):.2f} ms, "
                      f"overhead p50 {o['framework_overhead'].get('p50', 0):.3f} ms, peak RSS "
                      f"{row['graph_peak_rss_bytes'] / 1e6:.1f} MB = {row['peak_rss_over_checkpoint']}x checkpoint",
                      flush=True)

    result = {"bench": "pipeline", "machine": machine(), "seconds": args.seconds, "rows": rows}
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(result, f, indent=2)
        with open(args.out + ".md", "w") as f:
            m = result["machine"]
            f.write(f"# pi0.5 pipeline: framework overhead and memory\n\nMachine: {m['cpu']}, {m['cores']} cores, "
                    f"{m['memory_gb']} GB, Linux {m['kernel']}. `bench/pipeline.py --seconds {args.seconds}`; "
                    "numbers from `edgevla bag report` of each recorded run (recording on, lz4); CPU cores busy = "
                    "user + system time of the launch's processes over the run's length (start-up included).\n\n")
            f.write("| config | launch | chunks | camera->actuation p50 / p99 ms | stage compute p50 ms "
                    "(camera + pre + backbone + head) | overhead p50 / p99 ms | stage hand-offs p50 / p99 ms | "
                    "peak RSS MB | checkpoint MB | ratio | CPU cores busy |\n"
                    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
            for r in rows:
                s, lat = r["stages_ms"], r["latency_ms"]
                compute = sum(s[k].get("p50", 0) for k in ("camera", "preprocess", "backbone", "action_head"))
                f.write(f"| {r['config']} | {r['launch']} | {r['chunks']} | "
                        f"{lat['camera_to_actuation'].get('p50', 0):.2f} / {lat['camera_to_actuation'].get('p99', 0):.2f} | "
                        f"{compute:.2f} | {lat['framework_overhead'].get('p50', 0):.3f} / "
                        f"{lat['framework_overhead'].get('p99', 0):.3f} | "
                        f"{lat['stage_handoffs'].get('p50', 0):.3f} / {lat['stage_handoffs'].get('p99', 0):.3f} | "
                        f"{r['graph_peak_rss_bytes'] / 1e6:.1f} | "
                        f"{r['checkpoint_bytes'] / 1e6:.1f} | {r['peak_rss_over_checkpoint']} | "
                        f"{r['cpu_cores_busy']} |\n")
            f.write("\nWhere the overhead goes (p50 ms; delivery = publish -> next stage's callback start, "
                    "in-node = callback time outside the stage's compute):\n\n| config | launch | "
                    + " | ".join(k.replace("_", " ") for k in rows[0]["overhead_ms"]) + " |\n|---|---|"
                    + "---:|" * len(rows[0]["overhead_ms"]) + "\n")
            for r in rows:
                f.write(f"| {r['config']} | {r['launch']} | "
                        + " | ".join(f"{v.get('p50', 0):.3f}" for v in r["overhead_ms"].values()) + " |\n")
            if any(r["node_info"] for r in rows):
                f.write("\nDeliveries as the receiving stages count them (`edgevla node info` 2 s before each "
                        "run's end, whole run so far; p50 µs of the stage's input subscription: delay = publish -> "
                        "callback start; from another process split into transport = publish -> taken from the "
                        "ring, and hand-off = taken -> callback start; spins = upstream spins taken / missed):\n\n"
                        "| config | launch | stage | input | delay | transport | hand-off | spins |\n"
                        "|---|---|---|---|---:|---:|---:|---|\n")
                for r in rows:
                    for node, info in r["node_info"].items():
                        spin = info.get("upstream_spin") or {}
                        spins = f"{spin['taken']} / {spin['missed']}" if spin else ""
                        for name, sub in info["subscriptions"].items():
                            f.write(f"| {r['config']} | {r['launch']} | {node} | {name} | "
                                    f"{sub.get('delay_p50_us', 0):.1f} | {sub.get('transport_p50_us', '')} | "
                                    f"{sub.get('handoff_p50_us', '')} | {spins} |\n")
        print(f"wrote {args.out}.json and {args.out}.md")


if __name__ == "__main__":
    main()
