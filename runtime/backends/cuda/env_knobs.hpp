// The cuda backend's run-time knobs: every environment variable it reads, with what it does.
// Most exist to compare a kernel form against the default in one run (bench/results/issue9_h200
// holds each measurement); the defaults are what was measured fastest. At load the backend names
// any variable set under its prefixes that is not in this list (runtime/util/env_check.hpp), so a
// misspelt knob is not silently ignored; tests/runtime/cuda_env_knobs_test.cpp keeps this list
// and the variables the sources read the same.
#pragma once

#include <string_view>

#include "runtime/util/env_check.hpp"

namespace edgevla::backends::cuda {

inline constexpr std::string_view kEnvPrefixes[] = {"EDGEVLA_CUDA_", "EDGEVLA_ATTN_", "EDGEVLA_GEMM_",
                                                    "EDGEVLA_WGMMA_"};

inline constexpr EnvKnob kEnvKnobs[] = {
    // Attention (kernels/attention.cu).
    {"EDGEVLA_ATTN_NARROW", "narrow blocks (32 stacked rows): 0 never, 1 wherever they apply, 2 (default) where "
                            "64-row blocks fill at most half the device"},
    {"EDGEVLA_ATTN_HD48", "head dims up to 48 on their own instance: 1 (default), 0 pads them to 64"},
    {"EDGEVLA_ATTN_SHORT_KEYS", "walks of at most 32 keys at head dims up to 48 in one 32-key tile: 0 (default), 1"},
    {"EDGEVLA_ATTN_MIN_TILES", "key tiles a share at least when a call splits its keys (default 3)"},
    {"EDGEVLA_ATTN_CLUSTER", "key shares merged inside a cluster instead of by the combine kernel: 0 (default), 1"},
    {"EDGEVLA_ATTN_ROTATE", "rotated key walks: 0 (default), 1"},
    {"EDGEVLA_ATTN_WIDE_ROWS", "head dim 256 in 128-row blocks from this many 64-row blocks up (0, default: never)"},
    {"EDGEVLA_ATTN_WG", "head dim 256 on the warpgroup kernel: 0 never, 1 or 2 warpgroups a block (unset: the plan's "
                        "choice)"},
    {"EDGEVLA_ATTN_WG128", "head dims 65-128 on the warpgroup kernel: 3 (default) one warpgroup a block where those "
                           "blocks are no more than the multiprocessors, else 2; 2, 1, or 0 never"},
    {"EDGEVLA_ATTN_WG128_B", "the same also for calls with block b (GR00T's LLM): 1 (default), 0"},
    {"EDGEVLA_ATTN_QK_TRIM", "head dims 65-80 on the warpgroup kernel's producer-warp form: q·kᵀ over 80 dims: 1 (default), 0"},
    {"EDGEVLA_ATTN_WG_KEYS", "that trimmed form's walk tile with one warpgroup a block and one key share: 64 keys (default) or 128"},
    {"EDGEVLA_ATTN_WG256_ROLES", "head dim 256 (one warpgroup a block: the prefix, the experts under EDGEVLA_ATTN_WG_EXPERT): copies from a producer warp: 1 (default), 0"},
    {"EDGEVLA_ATTN_WG_ROLES", "head dims 65-128 on the warpgroup kernel: copies from a producer warp, no block barrier in the walk: 1, 2 (default: also the warpgroups taking turns), 0"},
    {"EDGEVLA_ATTN_WG_TMA", "the warpgroup kernel's K and V by bulk tensor copies: 1 (default), 0"},
    {"EDGEVLA_ATTN_WG_EXPERT", "the warpgroup kernel also for the action experts' attention: 0 (default), 1"},
    {"EDGEVLA_ATTN_WG_SHARES", "the warpgroup kernel's key shares fixed at N (1-12; unset: the plan's rule)"},
    {"EDGEVLA_ATTN_WG_SHARE_TILES", "the warpgroup kernel's rule: shares of at least N 64-key tiles (2-8, default 3)"},
    // GEMMs (kernels/gemm*.{cpp,hpp}, kernels/wgmma_gemm.cu, wgmma_plan.cpp).
    {"EDGEVLA_GEMM_PLAN_FILE", "a file of GEMM picks reused instead of timing them, new picks appended (per GPU "
                               "and cuBLASLt version)"},
    {"EDGEVLA_GEMM_NEAR_ROWS", "cuBLASLt's first picks at row counts near each GEMM's (±8, 16, 32) timed beside its "
                               "own: 1 (default), 0"},
    {"EDGEVLA_GEMM_MAX_K_PARTS", "cap on the k parts of a split GEMM (1: every GEMM whole)"},
    {"EDGEVLA_WGMMA_AHEAD", "weight stages the warpgroup GEMM copies before the chain's wait (0-8, default 4)"},
    {"EDGEVLA_WGMMA_EVICT_FIRST", "the warpgroup GEMM's weight copies marked first to evict from L2: 1 (default), 0"},
    {"EDGEVLA_CUDA_WGMMA", "the heads' projections on the warpgroup GEMM: all (default), 0, or a comma list"},
    {"EDGEVLA_CUDA_WGMMA_CHAIN", "the warpgroup GEMMs chained as programmatic dependents: 1 (default), 0"},
    {"EDGEVLA_CUDA_WGMMA_PARTS", "k parts at most of the warpgroup GEMM (1-8; default 8)"},
    {"EDGEVLA_CUDA_WGMMA_SPLIT", "k slices at most of the warpgroup GEMM in a cluster (default 4)"},
    {"EDGEVLA_CUDA_WGMMA_ROPE", "RoPE in the q|k|v GEMM's epilogue: 0 (default), 1"},
    {"EDGEVLA_CUDA_WGMMA_MLP", "each MLP half as one clustered kernel: 0 (default), 1"},
    {"EDGEVLA_CUDA_WGMMA_HEADS", "GR00T's attention blocks as one kernel a block (projection + attention): 1 (default), self, cross, 0"},
    {"EDGEVLA_CUDA_WGMMA_W8", "int8 copies of the heads' weights (one scale a feature): 0 (default), 1"},
    {"EDGEVLA_CUDA_WGMMA_BACKBONE", "GR00T's LLM projections on the warpgroup GEMM: 0 (default), 1"},
    {"EDGEVLA_CUDA_GEMM_NORM", "the norm after o and down done by their GEMM: 0 (default), 1 (k parts), cluster"},
    {"EDGEVLA_CUDA_BACKBONE_CHAIN", "the backbones' own kernels (norms, attention, RoPE, GeGLU) launched chained "
                                    "behind the cuBLASLt GEMM before them (towers and LLMs): 0 (default), 1"},
    {"EDGEVLA_CUDA_ROW_BUCKET", "prompt / prefix rows padded to a multiple of N (1-64, default 16): one backbone graph "
                                "and GEMM plan set a bucket"},
    {"EDGEVLA_CUDA_GROOT_OVERLAP", "GR00T's once-a-chunk host and cross keys|values work beside other device work: 2 (default, "
                                   "the state token and τ on the side stream too), 1, 0"},
    {"EDGEVLA_CUDA_GROOT_SCALAR", "GR00T's LLM SwiGLU and q/k norm + RoPE in their scalar forms: 0 (default), 1"},
    {"EDGEVLA_CUDA_PATCH_PAD", "the patch embedding's k padded with zeros to a multiple of 64 (default); 0 as stored"},
    {"EDGEVLA_CUDA_TOWER_MLP_PAD", "the vision towers' MLP padded with zeros to a multiple of 64 (default); 0 as stored"},
    {"EDGEVLA_CUDA_TOWER_STREAM", "the vision towers' residual stream in the compute dtype (bf16): 1 "
                                  "(default), 0 in f32"},
    {"EDGEVLA_CUDA_WIDE_GEMM", "the many-rows warpgroup GEMM among the GEMM plans' candidates (Hopper, bf16): 0 (default), 1"},
    {"EDGEVLA_CUDA_BACKBONE_PARTS", "the backbones' residual GEMMs in k parts (default); 0 runs them whole"},
    // The pi0 / pi0.5 action head (pi0/).
    {"EDGEVLA_CUDA_CHAIN_GEMM", "projections on the chained few-rows GEMM: unset (default), all, or a comma list"},
    {"EDGEVLA_CUDA_CHAIN_LAUNCH", "which launches are chained: gemms (default), all, 0"},
    {"EDGEVLA_CUDA_FLOW_STEP", "each Euler step's boundary in one launch: unset (default: on), 0 off"},
    {"EDGEVLA_CUDA_ATTN_ROPE", "RoPE inside the expert's attention: 0 (default), 1"},
    {"EDGEVLA_CUDA_FUSED_EXPERT", "each Euler step as one persistent kernel: 0 (default), 1"},
    {"EDGEVLA_CUDA_FUSED_PREFETCH", "that kernel prefetching the next weights into L2: 0 (default), 1"},
    {"EDGEVLA_CUDA_FUSED_TRACE", "that kernel's phase timestamps, logged: 0 (default), 1"},
    {"EDGEVLA_CUDA_LAYER_FENCES", "the backbone hands its own cache out with per-layer events, the action head's first "
                                  "step following it layer by layer: 2 (default: also a cache bound on the device, "
                                  "written layer by layer inside the pass), 1 the backbone's own cache only, 0 off"},
    // Every engine.
    {"EDGEVLA_CUDA_SYNC_OUTPUTS", "outputs handed over after a host sync instead of a ready fence: 0 (default), 1"},
    {"EDGEVLA_CUDA_PRIORITY", "stages (a comma list, e.g. action_head) whose stream gets the device's greatest "
                              "priority; unset (default): none"},
    {"EDGEVLA_CUDA_ABLATE", "kernel classes left out, for profiling (builds with -DEDGEVLA_CUDA_ABLATION=ON only)"},
};

}  // namespace edgevla::backends::cuda
