"""One replay of each of a PyTorch bench's CUDA graphs inside an NVTX range
"torch.<variant>.<stage>", between cudaProfilerStart and Stop: what --profile-ranges does, so
that `ncu --profile-from-start off --nvtx --nvtx-include "torch.compile.backbone/"` times one
stage's kernels for bench/kernel_breakdown.py."""


def profile_replays(torch, sync, variant, graphs):
    """graphs: (stage, torch.cuda.CUDAGraph) pairs; sync(): waits for the device."""
    sync()
    for stage, g in graphs:
        torch.cuda.profiler.start()
        torch.cuda.nvtx.range_push(f"torch.{variant}.{stage}")
        g.replay()
        sync()
        torch.cuda.nvtx.range_pop()
        torch.cuda.profiler.stop()
