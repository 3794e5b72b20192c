"""Timing helpers of the PyTorch benches (torch_pi0_cuda.py, torch_groot.py): the wall-clock
median, p90 and minimum of a callable, a CUDA graph of a function, and the cosine of two
tensors. torch is passed in, as in torch_profile.py, so that importing this costs nothing."""
import time

import numpy as np


def time_fn(sync, fn, repeat, warmup):
    """Milliseconds per fn() after `warmup` calls; sync() waits for the device after each."""
    for _ in range(warmup):
        fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(1e3 * (time.perf_counter() - t0))
    return dict(median=round(float(np.median(ts)), 3), p90=round(float(np.percentile(ts, 90)), 3),
                min=round(float(np.min(ts)), 3))


def capture(torch, fn, args, warm=2):
    """A CUDA graph of fn(*args), its inputs the static tensors args -> (graph, static outputs).
    fn runs `warm` times on a side stream first, as graph capture requires."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(*args)
    torch.cuda.synchronize()
    return g, out


def cosine(a, b):
    """Cosine similarity of two tensors of any shape, in float64."""
    a, b = a.double().flatten(), b.double().flatten()
    return float((a @ b) / max(float(a.norm() * b.norm()), 1e-300))
