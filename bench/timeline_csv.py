#!/usr/bin/env python3
"""Reads a CSV that a CUDA bench's --timeline-csv wrote (bench/cuda_timeline.hpp) and prints, for
one recorded chunk, what the device did on each stream: records, span, summed busy time, the idle
gaps between a stream's consecutive records (how many, how long in all) and how many records
overlapped the one before (chained launches), the busy union over streams, and the kernels,
copies and memsets with the most summed time. --list FROM TO also prints every record starting
between FROM and TO microseconds into the chunk.

Usage: bench/timeline_csv.py FILE.csv[.gz] [--chunk N] [--top K] [--list FROM TO]
Chunk 0 holds the first graph launches under recording; 1 (the default) is the first steady one.
"""
import argparse
import collections
import csv
import gzip
import sys


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [(r["kind"], int(r["stream"]), int(r["start_ns"]), int(r["end_ns"]), r["name"])
                for r in csv.DictReader(f)]
    chunks = sorted((s, e) for k, _, s, e, _ in rows if k == "chunk")
    records = sorted((r for r in rows if r[0] != "chunk"), key=lambda r: r[2])
    if not chunks and records:  # written before chunk rows existed: the whole file as one
        chunks = [(records[0][2], max(r[3] for r in records))]
    return chunks, records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--chunk", type=int, default=1)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--list", nargs=2, type=float, metavar=("FROM_US", "TO_US"))
    a = ap.parse_args()
    chunks, records = read(a.csv)
    if not 0 <= a.chunk < len(chunks):
        sys.exit(f"timeline_csv: {a.csv} holds {len(chunks)} chunk(s); --chunk {a.chunk} is not one of them")
    t0, t1 = chunks[a.chunk]
    run = [r for r in records if r[3] > t0 and r[2] < t1]
    if not run:
        sys.exit(f"timeline_csv: chunk {a.chunk} of {a.csv} holds no device record")
    us = lambda ns: ns / 1e3
    print(f"chunk {a.chunk} of {len(chunks)}: window {us(t1 - t0):.1f} us, {len(run)} records")

    busy, end = 0, None
    for _, _, s, e, _ in run:
        s, e = max(s, t0), min(e, t1)
        if end is None or s >= end:
            busy += e - s
            end = e
        elif e > end:
            busy += e - end
            end = e
    print(f"busy (union over streams) {us(busy):.1f} us, idle {us(t1 - t0 - busy):.1f} us")

    by_stream = collections.defaultdict(list)
    for r in run:
        by_stream[r[1]].append(r)
    for stream, rs in sorted(by_stream.items(), key=lambda x: x[1][0][2]):
        gaps, gap_ns, overlapped, last = 0, 0, 0, rs[0][3]
        for r in rs[1:]:
            if r[2] > last:
                gaps += 1
                gap_ns += r[2] - last
            elif r[2] < last:
                overlapped += 1
            last = max(last, r[3])
        print(f"  stream {stream}: {len(rs)} records, {us(rs[0][2] - t0):.1f}-{us(rs[-1][3] - t0):.1f} us, "
              f"busy sum {us(sum(r[3] - r[2] for r in rs)):.1f}, {gaps} gaps {us(gap_ns):.1f} us, "
              f"{overlapped} overlapping the record before")

    totals = collections.defaultdict(lambda: [0, 0])
    for _, stream, s, e, name in run:
        t = totals[(stream, name[:90])]
        t[0] += e - s
        t[1] += 1
    print(f"top {a.top} by summed time (stream, total us, count, mean us, name):")
    for (stream, name), (ns, n) in sorted(totals.items(), key=lambda x: -x[1][0])[:a.top]:
        print(f"  s{stream} {us(ns):9.1f} {n:5d} {us(ns) / n:7.2f}  {name}")

    if a.list:
        lo, hi = a.list
        print(f"records starting {lo}-{hi} us into the chunk (start, duration us, stream, name):")
        for _, stream, s, e, name in run:
            if lo <= us(s - t0) <= hi:
                print(f"  {us(s - t0):9.1f} {us(e - s):7.2f} s{stream} {name[:100]}")


if __name__ == "__main__":
    main()
