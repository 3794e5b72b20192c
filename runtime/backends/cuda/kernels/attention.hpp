// Attention kernels of the cuda backend, flash-style: scores are computed a tile at a time in
// registers/shared memory with an online softmax (f32), never materialised as rows × keys.
//
// One call covers `batch` independent sequences (SigLIP: one per camera). Per sequence:
//   q    act [rows, heads, h]          row stride ldq (elements), batch stride q_batch
//   keys in two blocks, each [len, kv_heads, h] with row stride ld (k and v alike):
//        block a (e.g. the cached prefix): its length is read on the device (*a_len), so a
//        captured graph serves any prefix length up to the buffers' capacity; block b (the
//        stage's own keys) has a fixed length b_len (0: none).
//   out  act [rows, heads, h]          row stride ldo, batch stride o_batch
// Query row r of head hd attends every key of block a, and the first b_limit[r] keys of
// block b (b_limit int32 [rows] on the device; nullptr: all b_len) — pi0's state token sees the
// prefix and itself only. Grouped heads: head hd reads kv head hd / (heads / kv_heads).
// head_dim h: any multiple of 8 up to 256 (SigLIP 72, Gemma 256). act: f32 or bf16 (bf16 uses
// tensor cores, f32 CUDA cores for `precision: f32`); scores, softmax and accumulation are f32.
// A row that sees no key at all is written as zeros.
//
// Shared memory: bf16 blocks take up to 169 KB (head dim 256, two key groups) where the device
// allows it, 101 KB with one group, and 68 KB (16-key tiles) on devices that give a block less
// (Ampere and Ada parts); below that, the call fails with an error naming both sizes.
// Alignment: q, out, and the k/v pointers 16-byte aligned; every row and batch stride a multiple
// of 8 elements (fused QKV layouts qualify: their offsets are multiples of h).
// a_len may be nullptr: block a then has its full length a_max (a static key count, SigLIP);
// a_max 0 means no block a. *a_len is clamped to [0, a_max].
//
// Split keys: when the grid would leave multiprocessors idle (few query rows, many keys: the
// action expert; Gemma's prefix on a large GPU), the keys are divided among several blocks (at
// most 12; a walk of 4 key tiles or fewer is never split) whose partial results a second kernel
// combines (or, on compute capability 9.0+, that merge among themselves as one cluster:
// AttentionArgs::cluster). Where the blocks fit one wave with two key groups each, the shares fill that wave;
// otherwise they aim at two blocks a multiprocessor. The partials live in caller-provided scratch (args.scratch, 16-byte aligned,
// args.scratch_bytes); attention_scratch_bytes(args) says how much the call would use at most.
// With less (or none) the call splits only as far as the scratch allows (no scratch: no split),
// so any size is correct, just slower. The split count depends only on the host-side shapes,
// a_max and the device, never on *a_len, so a captured graph stays valid for every length.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backends/cuda/kernels/common.hpp"

namespace edgevla::backends::cuda {

struct KvBlock {
  const void* k = nullptr;
  const void* v = nullptr;
  std::int64_t ld = 0;        // row stride of k and v (elements)
  std::int64_t batch = 0;     // batch stride (elements)
};

struct AttentionArgs {
  DType act = DType::kBF16;
  std::int64_t batch = 1;
  std::int64_t rows = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t h = 0;
  float scale = 1.0f;
  const void* q = nullptr;
  std::int64_t ldq = 0, q_batch = 0;
  void* out = nullptr;
  std::int64_t ldo = 0, o_batch = 0;
  KvBlock a;                          // block a; length *a_len (device), at most a_max
  const std::int32_t* a_len = nullptr;
  std::int64_t a_max = 0;
  KvBlock b;                          // block b; length b_len
  std::int64_t b_len = 0;
  const std::int32_t* b_limit = nullptr;  // [rows] on the device, or nullptr
  void* scratch = nullptr;                // split-key partials (device, 16-byte aligned), or nullptr
  std::size_t scratch_bytes = 0;          // size of scratch
  // Chained launches (launch.cuh): true when no kernel of the chain writes block a or *a_len
  // (a cached prefix), so the kernel reads them before it waits for the kernel ahead of it.
  bool a_constant = false;
  // Head dim 256 (bf16): blocks of 128 stacked rows (8 warps, one key group) instead of 64
  // wherever the 64-row plan has at least this many blocks; 0: never; -1: the process's choice
  // (the EDGEVLA_ATTN_WIDE_ROWS variable, else -DEDGEVLA_ATTN_WIDE_ROWS; never by default).
  int wide_from = -1;
  // bf16 at head dims up to 80, 128 and 256 (not with wide blocks): blocks of 32 stacked rows (2
  // warps a key group) instead of 64, so that a call with few row tiles spreads over twice the
  // multiprocessors with half the warps on each; 1 yes; 0 no; -1: the process's choice
  // (EDGEVLA_ATTN_NARROW: 0 never; 1 wherever they apply; 2, the default, where the 64-row
  // blocks fill at most half of the multiprocessors).
  int narrow = -1;
  // bf16 at head dims up to 48 with at most 32 keys in all (GR00T's DiT self-attention): one
  // 32-key tile instead of a 64-key one; 1 yes; 0 no; -1: the process's choice
  // (EDGEVLA_ATTN_SHORT_KEYS: 0 never, the default until measured on a GPU; 1 wherever it applies).
  int short_keys = -1;
  // Head dim 256, block a only, bf16, on a compute capability 9.0 device with an sm_90a build:
  // the warpgroup kernel (attention_wg.cu) instead of attn_bf16, with 1 or 2 warpgroups (64 or
  // 128 stacked rows) a block wherever it applies; 0: never; -1: the process's choice (the
  // EDGEVLA_ATTN_WG variable, 0, 1 or 2; unset: one warpgroup wherever wg_tma is on and K/V's
  // strides allow bulk tensor copies).
  int wg = -1;
  // Head dims 65-128 (the vision towers' 72, GR00T's LLM's 128), block a only, bf16, on a compute
  // capability 9.0 device with an sm_90a build: the warpgroup kernel at head dim 128 (the dims past
  // h zero) with K and V by bulk tensor copies, 1 or 2 warpgroups a block; 0: never; -1: the
  // process's choice (EDGEVLA_ATTN_WG128: 3, the default: one warpgroup a block where those blocks
  // are no more than the multiprocessors, else two; 2, 1 or 0).
  int wg_narrow = -1;
  // The same kernel at head dim 128 also for calls with block b (its keys' per-row limits: GR00T's
  // LLM, causal over packed keys, has only block b): 1 yes; 0 no; -1: the process's choice
  // (EDGEVLA_ATTN_WG128_B, 1 by default since run 58).
  int wg_narrow_b = -1;
  // The warpgroup kernel at head dims 65-128 (and at 256 for block a alone with one warpgroup a
  // block, EDGEVLA_ATTN_WG256_ROLES, on by default since run 58): its copies issued by a producer warp, the warpgroups
  // sharing no barrier inside the walk (1; 2 with the two warpgroups taking turns at issuing their
  // multiplies), or by thread 0 between block barriers (0); -1 the
  // process's choice (EDGEVLA_ATTN_WG_ROLES, 2 by default since run 57).
  int wg_roles = -1;
  // With it at head dims up to 80 (block a alone): q·kᵀ over 80 of the 128 dims (1), or all (0);
  // -1 the process's choice (EDGEVLA_ATTN_QK_TRIM, 1 by default since run 58).
  int wg_qk_trim = -1;
  // That trimmed form's walk tile with one warpgroup a block and one key share: 64 keys or 128 (the waits,
  // turns and softmax rescales once a 128 keys); -1 the process's choice (EDGEVLA_ATTN_WG_KEYS, 64
  // by default).
  int wg_keys = -1;
  // The warpgroup kernel's K and V by bulk tensor copies (TMA, 128-byte swizzle) instead of
  // cp.async (which it keeps where a base is not 16-byte aligned): 1 yes; 0 no; -1: the process's
  // choice (EDGEVLA_ATTN_WG_TMA, 0 or 1; on by default).
  int wg_tma = -1;
  // Each row tile's block walks its share of the key tiles from a different tile (bf16 kernels),
  // so that a call's blocks do not read the same K/V tile together. 1: always; 0: never; -1: the
  // process's choice (EDGEVLA_ATTN_ROTATE, 0 or 1; off by default, not yet measured).
  int rotate = -1;
  // Split shares (bf16 kernel, compute capability 9.0+): the shares of a row tile run as one
  // thread-block cluster and merge their partials through each other's shared memory, with no
  // scratch round trip and no combine kernel, wherever the device holds all of the call's
  // clusters at once. 1 yes; 0 no (partials in scratch, merged by a second kernel); -1: the
  // process's choice (EDGEVLA_ATTN_CLUSTER, 0 or 1; off by default: no faster than the combine
  // kernel inside the chained heads on the H200, run 40).
  int cluster = -1;
  // bf16 on attn_bf16 (not the warpgroup or wide kernels), to compare launch shapes (the kernel
  // bench): key groups a block (1, or 2 where two fit the device and a share has a tile for each)
  // and key shares (at least 1; at most kMaxSplits and what the scratch holds); 0: the plan's.
  int key_groups = 0;
  int shares = 0;
  // RoPE inside the call (the bf16 kernel; f32 activations refuse it): q's row r and block b's key
  // j are rotated (rotate-half pairs (i, i + h/2)) by row r / row j of this table before their
  // products, exactly as rope() would have rotated them in memory (q and k stay as they are). The
  // table: f32 (cos, sin) pairs [max(rows, b_len)][h/2][2], 16-byte aligned, as rope_table()
  // writes it (kernels.hpp). nullptr: q and k are used as they are.
  const float* rope = nullptr;
};

// Device scratch bytes the call with these shapes would use at most (0: it never splits its
// keys); read off the shapes, a_max and the current device's multiprocessor count. The pointers
// and scratch fields of args are ignored.
std::size_t attention_scratch_bytes(const AttentionArgs& args);

// The most scratch any call of a family takes: `args` at batch 1..args.batch and at rows from
// `step` up to args.rows in steps of `step` (a length bucket), a key block whose length is args.rows
// (a_max or b_len: a self-attention) shortened with them. Fewer rows or sequences make fewer
// blocks and so more shares, so the largest call is not the one that needs the most: sized for
// it alone, the shorter calls split less than their plan asks (pi0.5's prefix and vision tower
// at one view ran unsplit that way until run 48).
std::size_t attention_scratch_bytes_upto(const AttentionArgs& args, std::int64_t step);

// Whether this call would run on the warpgroup kernel (AttentionArgs::wg) on this device.
bool attention_takes_warpgroup_kernel(const AttentionArgs& args);

// Whether this call would run on narrow blocks (AttentionArgs::narrow) on this device.
bool attention_takes_narrow_blocks(const AttentionArgs& args);

// The key groups a block and the key shares this call would run with on this device (zeros where
// the call is invalid or no device answers).
struct AttentionShape {
  int key_groups = 0;
  int shares = 0;
};
AttentionShape attention_launch_shape(const AttentionArgs& args);

// Whether this call would walk its keys in one 32-key tile (AttentionArgs::short_keys).
bool attention_takes_short_keys(const AttentionArgs& args);

// Whether this call would merge its key shares inside clusters (AttentionArgs::cluster) on this
// device, with the scratch it names.
bool attention_merges_in_clusters(const AttentionArgs& args);

// Enqueues the attention on `stream`; no allocation, no synchronisation (capturable).
Status attention(cudaStream_t stream, const AttentionArgs& args);

}  // namespace edgevla::backends::cuda
