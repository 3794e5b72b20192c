#!/usr/bin/python3
"""bench/timeline_csv.py on hand-made timeline CSVs (the layout bench/cuda_timeline.cpp writes):
the chunk rows split the records, the busy union over overlapping streams, a stream's gaps and
the records overlapping their predecessor, the summed-time table, --list, a gzipped file, a file
without chunk rows (one chunk), and the refusal of a chunk the file does not hold."""
import gzip
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "timeline_csv.py")

CSV = """kind,stream,start_ns,end_ns,name
chunk,0,1000,9000,"chunk 0"
chunk,0,10000,20000,"chunk 1"
kernel,7,1500,3000,"gemm"
kernel,7,3500,5000,"norm"
copy,8,4000,6000,"copy DtoH 4 B"
kernel,7,11000,12000,"gemm"
kernel,7,11500,15000,"norm"
kernel,7,15000,15500,"norm"
memset,7,16000,17000,"memset 4 B"
"""


def run(*args):
    p = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as d:
        plain = os.path.join(d, "t_2v.csv")
        with open(plain, "w") as f:
            f.write(CSV)
        packed = plain + ".gz"
        with gzip.open(packed, "wt") as f:
            f.write(CSV)

        # Chunk 1 (the default): gemm 11-12 and norm 11.5-15 overlap, a norm right behind (no gap,
        # no overlap), a memset after a gap: busy 11-15.5 and 16-17 = 5.5 us of a 10 us window.
        for path in (plain, packed):
            rc, out, err = run(path)
            expect(rc == 0, f"exit status {rc}: {err}")
            expect("chunk 1 of 2: window 10.0 us, 4 records" in out, out)
            expect("busy (union over streams) 5.5 us, idle 4.5 us" in out, out)
            expect("stream 7: 4 records, 1.0-7.0 us, busy sum 6.0, 1 gaps 0.5 us, 1 overlapping the record before"
                   in out, out)
            norm = [l for l in out.splitlines() if l.strip().endswith(" norm")]
            expect(len(norm) == 1 and norm[0].split()[1:4] == ["4.0", "2", "2.00"], out)

        # Chunk 0: two streams, the copy under the norm; --list names the records by start.
        rc, out, _ = run(plain, "--chunk", "0", "--list", "2", "3.5")
        expect(rc == 0, out)
        expect("busy (union over streams) 4.0 us, idle 4.0 us" in out, out)
        expect("stream 8: 1 records, 3.0-5.0 us, busy sum 2.0, 0 gaps 0.0 us" in out, out)
        listed = out.split("records starting")[1].splitlines()[1:]
        expect([l.split()[-1] for l in listed] == ["norm", "B"] and listed[1].split()[0] == "3.0", out)

        # Written before chunk rows existed: the whole file is one chunk.
        old = os.path.join(d, "old.csv")
        with open(old, "w") as f:
            f.write("\n".join(l for l in CSV.splitlines() if not l.startswith("chunk")) + "\n")
        rc, out, _ = run(old, "--chunk", "0")
        expect(rc == 0 and "chunk 0 of 1: window 15.5 us, 7 records" in out, out)

        # A chunk the file does not hold: one error naming the file and the count.
        rc, out, err = run(plain, "--chunk", "2")
        expect(rc != 0 and "holds 2 chunk(s)" in err and "--chunk 2" in err, f"{rc} {out} {err}")
    print("timeline_csv: all checks passed")


if __name__ == "__main__":
    main()
