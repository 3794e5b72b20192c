#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at the vision towers' attention shapes, each backend timed
as edgevla_bench_cuda_kernels --only attention_shapes times its own kernel: one CUDA graph of 18
calls replayed, microseconds a call. The same-run baseline for that bench's rows.

  python3 bench/torch_attention_shapes.py [--shape NAME] [--backend cudnn|flash|efficient] [--repeat 30]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# name: (sequences, rows, heads, head dim[, kv heads, causal]), keys = rows: the towers'
# self-attention (no mask), GR00T's LLM causal with grouped kv heads (131 / 212 tokens, as
# edgevla_bench_cuda_kernels' groot_llm_causal_* rows count them).
SHAPES = {
    "siglip_1view": (1, 256, 16, 72),
    "siglip_3view": (3, 256, 16, 72),
    "groot_siglip_1view": (1, 324, 16, 72),
    "groot_siglip_2view": (2, 324, 16, 72),
    "groot_llm_causal_1view": (1, 131, 16, 128, 8, True),
    "groot_llm_causal_2view": (1, 212, 16, 128, 8, True),
}
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def time_shape(name, backend, repeat):
    b, rows, heads, hd = SHAPES[name][:4]
    kv_heads, causal = (SHAPES[name][4:] + (heads, False))[:2]
    gen = torch.Generator(device="cuda").manual_seed(5)
    q = torch.randn(b, heads, rows, hd, device="cuda", dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(b, kv_heads, rows, hd, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(2))
    kw = dict(is_causal=causal, enable_gqa=kv_heads != heads)
    with sdpa_kernel(BACKENDS[backend]):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for _ in range(3):
                F.scaled_dot_product_attention(q, k, v, **kw)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(18):
                F.scaled_dot_product_attention(q, k, v, **kw)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    us = start.elapsed_time(end) * 1000.0 / (repeat * 18)
    # Two FLOPs a multiply-add of q·kᵀ and p·v over the keys each row sees.
    keys_seen = (rows + 1) / 2 if causal else rows
    flops = 4.0 * b * heads * rows * keys_seen * hd
    return {"bench": "torch_attention_shape", "shape": name, "backend": backend, "device": torch.cuda.get_device_name(),
            "torch": torch.__version__, "us_per_call_in_graph": round(us, 2), "tflops": round(flops / (us * 1e6), 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), help="one shape (default: all)")
    ap.add_argument("--backend", choices=sorted(BACKENDS), help="one backend (default: all)")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    for name in [args.shape] if args.shape else SHAPES:
        for backend in [args.backend] if args.backend else BACKENDS:
            try:
                print(json.dumps(time_shape(name, backend, args.repeat)), flush=True)
            except RuntimeError as err:  # a backend that does not take the shape
                print(json.dumps({"bench": "torch_attention_shape", "shape": name, "backend": backend,
                                  "error": str(err).splitlines()[0][:200]}), flush=True)


if __name__ == "__main__":
    main()
