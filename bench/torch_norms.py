#!/usr/bin/env python3
"""PyTorch's LayerNorm at the vision towers' shapes (1152 wide, f32 stream in, bf16 out, alone and
with a residual added first), eager and torch.compile'd, each timed as edgevla_bench_cuda_norms
times its own kernel: one CUDA graph of 27 calls replayed, microseconds a call. The same-run
baseline for that bench's tower rows.

  python3 bench/torch_norms.py [--repeat 20]
"""
import argparse
import json

import torch
import torch.nn.functional as F

ROWS = [256, 324, 648, 768]
WIDTH = 1152
CALLS = 27


def ln(x, w, b):
    return F.layer_norm(x, (WIDTH,), w, b, 1e-6).to(torch.bfloat16)


def add_ln(x, r, w, b):
    x.add_(r)
    return F.layer_norm(x, (WIDTH,), w, b, 1e-6).to(torch.bfloat16)


def graph_us(fn, args, repeat):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn(*args)
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(repeat):
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        best = min(best, 1000.0 * start.elapsed_time(stop) / CALLS)
    return round(best, 2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(3)
    w = torch.rand(WIDTH, device="cuda", generator=gen) + 0.5
    b = torch.rand(WIDTH, device="cuda", generator=gen) - 0.5
    compiled_ln, compiled_add_ln = torch.compile(ln), torch.compile(add_ln)
    for rows in ROWS:
        x = torch.randn(rows, WIDTH, device="cuda", generator=gen)
        r = torch.randn(rows, WIDTH, device="cuda", generator=gen) * 1e-3
        out = dict(bench="torch_norm", device=torch.cuda.get_device_name(), rows=rows, width=WIDTH,
                   ln_eager_us=graph_us(ln, (x, w, b), a.repeat), ln_compile_us=graph_us(compiled_ln, (x, w, b), a.repeat),
                   add_ln_eager_us=graph_us(add_ln, (x, r, w, b), a.repeat),
                   add_ln_compile_us=graph_us(compiled_add_ln, (x, r, w, b), a.repeat))
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
