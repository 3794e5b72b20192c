// What the cuda engine tests (pi0, GR00T) share to compare a cuda run with the CPU backend's:
// the skip without a GPU, rel-L2, cosine and the finite check of an f32 host tensor, and the
// folders of the checkpoints a test process generates, removed when it exits.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <utility>

#include <unistd.h>

#include "runtime/core/tensor.hpp"

namespace edgevla::backends::test {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_GPU() \
  if (!::edgevla::backends::test::have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine"

// A GEMM plan file a test writes (EDGEVLA_GEMM_PLAN_FILE): removed when made and when it goes.
class TempPlanFile {
 public:
  explicit TempPlanFile(std::string path) : path_(std::move(path)) { drop(); }
  ~TempPlanFile() { drop(); }
  TempPlanFile(const TempPlanFile&) = delete;
  TempPlanFile& operator=(const TempPlanFile&) = delete;
  const char* c_str() const { return path_.c_str(); }

 private:
  void drop() const {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  std::string path_;
};

// Generated checkpoint folders by key, removed when the holder goes (a function's static: at exit).
class GeneratedDirs {
 public:
  GeneratedDirs() = default;
  GeneratedDirs(const GeneratedDirs&) = delete;
  GeneratedDirs& operator=(const GeneratedDirs&) = delete;
  ~GeneratedDirs() {
    for (const auto& [key, dir] : by_key_) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }

  // The folder of `key` (edgevla-gpu-<pid>-<key> in the temp folder): on first use emptied and
  // filled by generate(dir).
  template <class Generate>
  const std::string& get(const std::string& key, Generate&& generate) {
    if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("edgevla-gpu-" + std::to_string(::getpid()) + "-" + key)).string();
    std::filesystem::remove_all(dir);
    generate(dir);
    return by_key_.emplace(key, dir).first->second;
  }

 private:
  std::map<std::string, std::string> by_key_;
};

// ‖a − b‖ / ‖b‖ over n values.
inline double rel_l2(const float* a, const float* b, std::int64_t n) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline double cosine(const float* a, const float* b, std::int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(std::max(aa * bb, 1e-300));
}

// Every value of an f32 host tensor is finite.
inline bool all_finite(const Tensor& t) {
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(t.data<float>()[i])) return false;
  }
  return true;
}

}  // namespace edgevla::backends::test
