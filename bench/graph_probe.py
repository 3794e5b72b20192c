"""Helpers for the graph benches that drive a real `edgevla launch` (bench/soak, bench/faults):
its process tree and what each process holds, `edgevla node stats`, the launcher's log, and a
launch file derived from launch/pi05_multiprocess.yaml."""
import os
import re
import subprocess
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg, who="bench"):
    print(f"[{who} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- the process tree ---------------------------------------------------------------------

def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields start after the last ')'
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(root):
    kids = children_map()
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def proc_sample(pid):
    """RSS/private RSS/PSS (kB), threads, fds and the /dev/shm files mapped by one process; None if gone."""
    try:
        status = open(f"/proc/{pid}/status").read()
        rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))
        # Private memory (heap, stacks): what a leak grows. VmRSS also counts the pages of
        # shared-memory segments this process has touched (RssShmem) and of mapped files.
        anon = int(re.search(r"^RssAnon:\s+(\d+)", status, re.M).group(1))
        threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
        pss = 0
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        shm = set()
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/dev/shm/"):
                    shm.add(parts[5].strip().replace(" (deleted)", ""))
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()
        return {"rss_kb": rss, "anon_kb": anon, "pss_kb": pss, "threads": threads, "fds": fds, "shm": shm, "cmd": cmd}
    except (OSError, AttributeError, ValueError):
        return None


def dev_shm_segments():
    prefix = f"edgevla.{os.getuid()}."
    n = size = 0
    for name in os.listdir("/dev/shm"):
        if name.startswith(prefix):
            try:
                size += os.stat(f"/dev/shm/{name}").st_size
                n += 1
            except OSError:
                pass
    return n, size


# --- the graph's own counters -------------------------------------------------------------

def node_stats(edgevla, env):
    """Sum of the dropped and errors columns of `edgevla node stats`, and per (node, callback) counts."""
    try:
        out = subprocess.run([edgevla, "node", "stats"], env=env, capture_output=True, text=True, timeout=20).stdout
    except subprocess.TimeoutExpired:
        return None
    dropped = errors = 0
    counts = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        try:
            count, dr, er = int(f[-7]), int(f[-3]), int(f[-2])
        except ValueError:
            continue
        dropped += dr
        errors += er
        counts[(f[1], f[2])] = count
    return {"dropped": dropped, "errors": errors, "counts": counts}


# --- the run --------------------------------------------------------------------------------

def make_launch(work, topics_skip, respawns, respawn_groups=(), split_s=0):
    """launch/pi05_multiprocess.yaml recording into WORK/soak.mcap, without `topics_skip`;
    the groups that respawn (and those in `respawn_groups`) restart up to `respawns` times.
    split_s > 0: a new bag part (soak_000.mcap, soak_001.mcap, ...) every split_s seconds."""
    src = os.path.join(ROOT, "launch", "pi05_multiprocess.yaml")
    with open(src) as f:
        doc = yaml.safe_load(f)
    doc["params_files"] = [os.path.normpath(os.path.join(ROOT, "launch", p)) for p in doc["params_files"]]
    doc["record"]["output"] = os.path.join(work, "soak.mcap")
    doc["record"]["topics"] = [t for t in doc["record"]["topics"] if t not in topics_skip]
    if split_s > 0:
        doc["record"]["split_s"] = int(split_s)
    for g in doc["groups"]:
        if g["name"] in respawn_groups:
            g["respawn"] = True
        if g.get("respawn"):
            g["max_respawns"] = respawns
    path = os.path.join(work, "soak_launch.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return path


class LauncherLog:
    """Follows the launcher's log for the groups' pids and restarts."""

    def __init__(self, path):
        self.path, self.pos, self.pids, self.restarts = path, 0, {}, []

    def poll(self):
        with open(self.path, errors="replace") as f:
            f.seek(self.pos)
            text = f.read()
            self.pos = f.tell()
        for m in re.finditer(r"group '([^']+)' (?:started|restarted) \(pid (\d+)", text):
            self.pids[m.group(1)] = int(m.group(2))
        for m in re.finditer(r"group '([^']+)' restarted \(pid (\d+)", text):
            self.restarts.append((time.time(), m.group(1), int(m.group(2))))
        return text


def chunks_received(stats):
    return stats["counts"].get(("actuation", "chunks"), 0) if stats else 0


