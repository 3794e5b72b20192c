#!/usr/bin/env python3
"""CPU use of each thread of a process over a window: thread_cpu.py PID SECONDS.
Prints one line a thread (name, tid, % of one CPU, the CPU it last ran on), busiest first."""
import os, sys, time

def snap(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f: name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f: st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        out[tid] = (name, int(rest[11]) + int(rest[12]), int(rest[36]))  # utime + stime, last cpu
    return out

pid, secs = int(sys.argv[1]), float(sys.argv[2])
hz = os.sysconf("SC_CLK_TCK")
a = snap(pid); time.sleep(secs); b = snap(pid)
rows = []
for tid, (name, t1, cpu) in b.items():
    t0 = a.get(tid, (name, t1, cpu))[1]
    rows.append((100.0 * (t1 - t0) / hz / secs, name, tid, cpu))
for pct, name, tid, cpu in sorted(rows, reverse=True):
    if pct >= 0.5: print(f"{name:16s} {tid:>8s} {pct:6.1f}%  cpu {cpu}")
print(f"total {sum(r[0] for r in rows):.1f}% over {len(rows)} threads")
