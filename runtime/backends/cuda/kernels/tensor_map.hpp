// Tensor maps for bulk tensor copies (TMA) of bf16 row-major matrices, shared by the kernels that
// fetch boxes of rows × 64 with the 128-byte swizzle (skinny_gemm, wgmma_gemm). Host code; the
// driver's encoder is looked up once through the runtime, so nothing links libcuda.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

namespace edgevla::backends::cuda {

// The driver's cuTensorMapEncodeTiled, or null where the driver has none.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A bf16 matrix [rows, k] (row stride ld elements, a multiple of 8; base 16-byte aligned) as
// boxes of box_rows × 64 with the 128-byte swizzle: 16-byte chunk c of a box's row r lands at
// chunk c ^ (r % 8) of that row's 128 bytes. Reads past the edges fill zeros. False when the
// driver refuses (or has no encoder).
inline bool encode_bf16_boxes(CUtensorMap& map, const void* base, std::int64_t k, std::int64_t rows, std::int64_t ld,
                              int box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 fn = tensor_map_encoder();
  if (fn == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  return fn(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, elem,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace edgevla::backends::cuda
