// What the cuda kernel tests share: host data packing, references' tolerances, the fixture
// (skips without a CUDA device) and the status/CUDA assertion macros.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/backends/cuda/kernels/gemm.hpp"
#include "runtime/backends/cuda/kernels/kernels.hpp"
#include "runtime/backends/cuda/kernels/skinny_gemm.hpp"
#include "runtime/core/dtype.hpp"

namespace edgevla::backends::cuda {
namespace {

#define EXPECT_OK(expr)                                    \
  do {                                                     \
    const ::edgevla::Status edgevla_s_ = (expr);           \
    EXPECT_TRUE(edgevla_s_.is_ok()) << edgevla_s_.to_string(); \
  } while (0)
#define ASSERT_OK(expr)                                    \
  do {                                                     \
    const ::edgevla::Status edgevla_s_ = (expr);           \
    ASSERT_TRUE(edgevla_s_.is_ok()) << edgevla_s_.to_string(); \
  } while (0)
#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(expr)

inline bool gpu_present() {
  static const bool present = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }();
  return present;
}

// ---- host data ------------------------------------------------------------------------------

// Bytes of `v` stored as dtype t (f32, bf16 or f16; bf16/f16 rounded to nearest even).
inline std::vector<unsigned char> pack(const std::vector<float>& v, DType t) {
  const std::size_t es = dtype_size(t);
  std::vector<unsigned char> out(v.size() * es);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(out.data() + i * 4, &v[i], 4);
    } else {
      const std::uint16_t bits = t == DType::kBF16 ? float_to_bfloat16(v[i]) : float_to_half(v[i]);
      std::memcpy(out.data() + i * 2, &bits, 2);
    }
  }
  return out;
}

inline std::vector<float> unpack(const std::vector<unsigned char>& b, DType t) {
  const std::size_t es = dtype_size(t);
  std::vector<float> out(b.size() / es);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(&out[i], b.data() + i * 4, 4);
    } else {
      std::uint16_t bits;
      std::memcpy(&bits, b.data() + i * 2, 2);
      out[i] = t == DType::kBF16 ? bfloat16_to_float(bits) : half_to_float(bits);
    }
  }
  return out;
}

// The values dtype t holds for v.
inline std::vector<float> rounded(const std::vector<float>& v, DType t) { return unpack(pack(v, t), t); }

inline std::vector<float> random_values(std::size_t n, float lo, float hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A device allocation that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 16)) {
    if (cudaMalloc(&p_, bytes_) != cudaSuccess) p_ = nullptr;
  }
  DeviceBuffer(const std::vector<float>& v, DType t) : DeviceBuffer(v.size() * dtype_size(t)) { upload(v, t); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  // Returns once the data is on the device: a pageable cudaMemcpy may return before its DMA
  // ends, and the tests' kernels run on a non-blocking stream that does not wait for it.
  void upload(const std::vector<float>& v, DType t, std::size_t offset_bytes = 0) {
    const auto b = pack(v, t);
    EXPECT_EQ(cudaMemcpy(static_cast<unsigned char*>(p_) + offset_bytes, b.data(), b.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<float> download(DType t, std::size_t n, std::size_t offset_bytes = 0) const {
    std::vector<unsigned char> b(n * dtype_size(t));
    EXPECT_EQ(cudaMemcpy(b.data(), static_cast<const unsigned char*>(p_) + offset_bytes, b.size(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return unpack(b, t);
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

// ---- comparisons ----------------------------------------------------------------------------

struct Tolerance {
  double rel_l2;  // ‖got − ref‖ / ‖ref‖
  double atol;    // per element: |got − ref| ≤ atol + rtol·|ref|
  double rtol;
};

// f32 results: the same math as the reference up to f32 rounding. bf16 results: one bf16
// rounding of the output (2⁻⁹ relative) plus the f32 work before it.
inline Tolerance tolerance_for(DType t) {
  return t == DType::kF32 ? Tolerance{1e-5, 1e-5, 1e-5} : Tolerance{1e-2, 1e-2, 1e-2};
}

inline void expect_close(const std::vector<float>& got, const std::vector<double>& ref, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double num = 0.0, den = 0.0, worst = 0.0;
  std::size_t worst_i = 0, bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
    const double excess = std::fabs(d) - (tol.atol + tol.rtol * std::fabs(ref[i]));
    if (!(excess <= 0.0)) {
      if (bad == 0 || excess > worst || std::isnan(excess)) {
        worst = excess;
        worst_i = i;
      }
      ++bad;
    }
  }
  const double rel = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  EXPECT_LE(rel, tol.rel_l2) << what << ": relative L2 error";
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements out of tolerance; worst at " << worst_i << ": got "
                     << got[worst_i] << ", expected " << ref[worst_i];
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline double gelu_ref(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

inline const char* name(DType t) { return dtype_name(t).data(); }

// ---- fixture --------------------------------------------------------------------------------

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (cudaGetDeviceCount found none)";
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  void sync() { ASSERT_CUDA(cudaStreamSynchronize(stream_)); }
  // After plain cudaMemcpy/cudaMemset calls (legacy stream): the test stream does not wait for
  // them by itself.
  void settle() { ASSERT_CUDA(cudaDeviceSynchronize()); }

  cudaStream_t stream_ = nullptr;
};

// Captures enqueue() (returning a Status) once into a graph on `s`, then replays the graph
// `replays` times, zeroing `out` (bytes) before each, and expects download() to give `first`
// every time: a kernel that keeps no state between launches replays bit for bit.
template <class T, class Enqueue, class Download>
void expect_graph_replays(cudaStream_t s, void* out, std::size_t bytes, int replays, const T& first, Enqueue enqueue,
                          Download download) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const Status st = enqueue();
  ASSERT_CUDA(cudaStreamEndCapture(s, &graph));
  ASSERT_OK(st);
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < replays; ++i) {
    ASSERT_CUDA(cudaMemsetAsync(out, 0, bytes, s));
    ASSERT_CUDA(cudaGraphLaunch(exec, s));
    ASSERT_CUDA(cudaStreamSynchronize(s));
    ASSERT_EQ(download(), first) << "replay " << i;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// RoPE's frequencies and a host RoPE (rotate-half pairs), for the rope and capture tests.
inline std::vector<float> inv_freqs(std::int64_t h) {
  std::vector<float> f(static_cast<std::size_t>(h / 2));
  for (std::size_t k = 0; k < f.size(); ++k) {
    f[k] = static_cast<float>(std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(h)));
  }
  return f;
}

// Reference rope over x [rows, ldx] (the first heads·h of each row), in double except for the
// angle, which is the f32 product as the backends compute it.
inline std::vector<double> rope_ref(const std::vector<float>& x, std::int64_t rows, std::int64_t heads, std::int64_t h,
                             std::int64_t ldx, std::int32_t first_pos, const std::vector<float>& inv_freq) {
  std::vector<double> out = to_double(x);
  const std::int64_t half = h / 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float pos = static_cast<float>(first_pos + r);
    for (std::int64_t j = 0; j < heads; ++j) {
      for (std::int64_t k = 0; k < half; ++k) {
        const double theta = static_cast<double>(pos * inv_freq[static_cast<std::size_t>(k)]);
        const std::size_t ia = static_cast<std::size_t>(r * ldx + j * h + k), ib = ia + static_cast<std::size_t>(half);
        const double a = x[ia], b = x[ib];
        out[ia] = a * std::cos(theta) - b * std::sin(theta);
        out[ib] = b * std::cos(theta) + a * std::sin(theta);
      }
    }
  }
  return out;
}

constexpr DType kActs[] = {DType::kF32, DType::kBF16};
constexpr float kEps = 1e-6f;

}  // namespace
}  // namespace edgevla::backends::cuda
