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
// tensor cores, f32 CUDA cores for `precision: f32`).
#pragma once

#include <cuda_runtime.h>

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
};

// Enqueues the attention on `stream`; no allocation, no synchronisation (capturable).
Status attention(cudaStream_t stream, const AttentionArgs& args);

}  // namespace edgevla::backends::cuda
