// What the attention tests share (cuda_attention_test.cpp, cuda_attention_forms_test.cpp): a
// problem on the device with its double-precision reference, the real and odd shapes, and the
// checks (one call, and a graph replayed at several prefix lengths). Without a CUDA device every
// test skips itself.
#pragma once

#include "runtime/backends/cuda/kernels/attention.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/dtype.hpp"

namespace edgevla::backends::cuda {
namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define EDGEVLA_SKIP_WITHOUT_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device"

constexpr float kSentinel = 7.0f;  // written around the output; must survive every call

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0 && cudaMalloc(&p_, bytes) != cudaSuccess) p_ = nullptr;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

struct Case {
  std::string name;
  int batch = 1, rows = 1, heads = 1, kv_heads = 1, h = 64;
  int a_max = 0;
  int a_len = 0;                // < 0: a_len pointer null (full a_max)
  int b_len = 0;
  std::vector<int> b_limit;     // per query row; empty: none
  int pad = 0;                  // extra elements at the end of every row (multiple of 8)
  int batch_pad = 0;            // extra elements at the end of every sequence (multiple of 8)
  bool fused = false;           // q, k, v side by side in one row (block a = the rows' own keys)
  bool nan_tail = true;         // block-a rows past a_len hold NaN (must never be read)
  float q_range = 2.0f;         // q uniform in [-q_range, q_range]; k, v in [-1, 1]
  int wide_from = -1;           // AttentionArgs::wide_from
  int wg = -1;                  // AttentionArgs::wg
  int wg_tma = -1;              // AttentionArgs::wg_tma
  int rotate = -1;              // AttentionArgs::rotate
  int cluster = -1;             // AttentionArgs::cluster
  int narrow = -1;              // AttentionArgs::narrow
  int short_keys = -1;          // AttentionArgs::short_keys
  int key_groups = 0;           // AttentionArgs::key_groups
  int shares = 0;               // AttentionArgs::shares
  int wg_narrow = -1;           // AttentionArgs::wg_narrow
  int wg_narrow_b = -1;         // AttentionArgs::wg_narrow_b
  int wg_roles = -1;            // AttentionArgs::wg_roles
  int wg_qk_trim = -1;          // AttentionArgs::wg_qk_trim
  int wg_keys = -1;             // AttentionArgs::wg_keys
};

struct Errors {
  double max_rel = 0.0;     // max |out - ref| / max |ref|
  double rel_l2 = 0.0;      // ||out - ref|| / ||ref||
  std::int64_t gaps_changed = 0;
  std::int64_t non_finite = 0;
};

// One problem on the device: inputs (host copies rounded to the activation dtype), the output
// buffer with sentinel gaps, a_len / b_limit on the device, scratch, and the call's arguments.
class Problem {
 public:
  Problem(const Case& c, DType act, bool use_scratch = true, std::size_t scratch_override = 0)
      : c_(c), act_(act), esize_(act == DType::kBF16 ? 2 : 4) {
    std::mt19937 rng(static_cast<unsigned>(1234 + c.rows * 131 + c.h * 17 + c.a_max * 7 + c.b_len));
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    auto round = [&](float x) { return act_ == DType::kBF16 ? bfloat16_to_float(float_to_bfloat16(x)) : x; };
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto make = [&](std::int64_t n) {
      bufs_.push_back(std::vector<float>(static_cast<std::size_t>(n), nan));
      return static_cast<int>(bufs_.size()) - 1;
    };
    const std::int64_t H = c.h, bp = c.batch_pad;
    const int a_valid = c.a_len < 0 || !c.nan_tail ? c.a_max : c.a_len;
    if (c.fused) {
      const std::int64_t ld = (c.heads + 2 * c.kv_heads) * H + c.pad, bs = c.rows * ld + bp;
      const int i = make(c.batch * bs);
      q_ = {i, 0, ld, bs};
      ak_ = {i, c.heads * H, ld, bs};
      av_ = {i, (c.heads + c.kv_heads) * H, ld, bs};
    } else {
      const std::int64_t ldq = c.heads * H + c.pad, ldk = c.kv_heads * H + c.pad;
      q_ = {make(c.batch * (c.rows * ldq + bp)), 0, ldq, c.rows * ldq + bp};
      if (c.a_max > 0) {
        ak_ = {make(c.batch * (c.a_max * ldk + bp)), 0, ldk, c.a_max * ldk + bp};
        av_ = {make(c.batch * (c.a_max * ldk + bp)), 0, ldk, c.a_max * ldk + bp};
      }
      if (c.b_len > 0) {
        bk_ = {make(c.batch * (c.b_len * ldk + bp)), 0, ldk, c.b_len * ldk + bp};
        bv_ = {make(c.batch * (c.b_len * ldk + bp)), 0, ldk, c.b_len * ldk + bp};
      }
    }
    for (int b = 0; b < c.batch; ++b) {
      for (int r = 0; r < c.rows; ++r) {
        for (std::int64_t e = 0; e < c.heads * H; ++e) at(q_, b, r, e) = round(c.q_range * unit(rng));
      }
      for (int j = 0; j < a_valid; ++j) {
        for (std::int64_t e = 0; e < c.kv_heads * H; ++e) {
          at(ak_, b, j, e) = round(unit(rng));
          at(av_, b, j, e) = round(unit(rng));
        }
      }
      for (int j = 0; j < c.b_len; ++j) {
        for (std::int64_t e = 0; e < c.kv_heads * H; ++e) {
          at(bk_, b, j, e) = round(unit(rng));
          at(bv_, b, j, e) = round(unit(rng));
        }
      }
    }
    ldo_ = c.heads * H + c.pad;
    o_batch_ = c.rows * ldo_ + bp;
    out_elems_ = c.batch * o_batch_;

    for (const auto& host : bufs_) {
      dev_.emplace_back(host.size() * esize_);
      if (!ok(dev_.back().get() != nullptr, "cudaMalloc")) return;
      if (!upload(dev_.back().get(), host)) return;
    }
    out_dev_ = DeviceBuffer(static_cast<std::size_t>(out_elems_) * esize_);
    a_len_dev_ = DeviceBuffer(sizeof(std::int32_t));
    if (!ok(out_dev_.get() != nullptr && a_len_dev_.get() != nullptr, "cudaMalloc")) return;
    reset_output();
    set_a_len(std::max(c.a_len, 0));
    if (!c.b_limit.empty()) {
      b_limit_dev_ = DeviceBuffer(c.b_limit.size() * sizeof(std::int32_t));
      std::vector<std::int32_t> lim(c.b_limit.begin(), c.b_limit.end());
      ok(cudaMemcpy(b_limit_dev_.get(), lim.data(), lim.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice) ==
             cudaSuccess,
         "b_limit upload");
    }

    args_.act = act;
    args_.batch = c.batch;
    args_.rows = c.rows;
    args_.heads = c.heads;
    args_.kv_heads = c.kv_heads;
    args_.h = c.h;
    args_.scale = 1.0f / std::sqrt(static_cast<float>(c.h));
    args_.q = ptr(q_);
    args_.ldq = q_.ld;
    args_.q_batch = q_.batch;
    args_.out = out_dev_.get();
    args_.ldo = ldo_;
    args_.o_batch = o_batch_;
    args_.wide_from = c.wide_from;
    args_.wg = c.wg;
    args_.wg_tma = c.wg_tma;
    args_.rotate = c.rotate;
    args_.cluster = c.cluster;
    args_.narrow = c.narrow;
    args_.short_keys = c.short_keys;
    args_.key_groups = c.key_groups;
    args_.shares = c.shares;
    args_.wg_narrow = c.wg_narrow;
    args_.wg_narrow_b = c.wg_narrow_b;
    args_.wg_roles = c.wg_roles;
    args_.wg_qk_trim = c.wg_qk_trim;
    args_.wg_keys = c.wg_keys;
    if (c.a_max > 0) {
      args_.a = {ptr(ak_), ptr(av_), ak_.ld, ak_.batch};
      args_.a_len = c.a_len < 0 ? nullptr : static_cast<const std::int32_t*>(a_len_dev_.get());
      args_.a_max = c.a_max;
    }
    if (c.b_len > 0) {
      args_.b = {ptr(bk_), ptr(bv_), bk_.ld, bk_.batch};
      args_.b_len = c.b_len;
      args_.b_limit = c.b_limit.empty() ? nullptr : static_cast<const std::int32_t*>(b_limit_dev_.get());
    }
    if (use_scratch) {
      const std::size_t bytes = scratch_override > 0 ? scratch_override : attention_scratch_bytes(args_);
      if (bytes > 0) {
        scratch_ = DeviceBuffer(bytes);
        ok(scratch_.get() != nullptr, "cudaMalloc scratch");
        args_.scratch = scratch_.get();
        args_.scratch_bytes = bytes;
      }
    }
  }

  bool ready() const { return ok_; }
  const AttentionArgs& args() const { return args_; }

  void set_a_len(int n) {
    const std::int32_t v = n;
    ok(cudaMemcpy(a_len_dev_.get(), &v, sizeof(v), cudaMemcpyHostToDevice) == cudaSuccess, "a_len upload");
  }

  void reset_output() {
    upload(out_dev_.get(), std::vector<float>(static_cast<std::size_t>(out_elems_), kSentinel));
  }

  // The output buffer as written (gaps included).
  std::vector<float> output() const {
    std::vector<float> out(static_cast<std::size_t>(out_elems_));
    if (!download(out)) out.clear();
    return out;
  }

  // Output against the reference for block-a length a_len.
  Errors compare(int a_len) const {
    Errors e;
    std::vector<float> out(static_cast<std::size_t>(out_elems_));
    if (!download(out)) {
      e.non_finite = -1;
      return e;
    }
    const std::vector<double> ref = reference(a_len);
    std::vector<char> valid(out.size(), 0);
    double max_ref = 0.0, max_err = 0.0, err2 = 0.0, ref2 = 0.0;
    std::size_t k = 0;
    for (int b = 0; b < c_.batch; ++b) {
      for (int r = 0; r < c_.rows; ++r) {
        for (std::int64_t x = 0; x < std::int64_t{c_.heads} * c_.h; ++x, ++k) {
          const std::size_t idx = static_cast<std::size_t>(b * o_batch_ + r * ldo_ + x);
          valid[idx] = 1;
          const double o = out[idx], d = o - ref[k];
          if (!std::isfinite(o)) ++e.non_finite;
          max_ref = std::max(max_ref, std::fabs(ref[k]));
          max_err = std::max(max_err, std::fabs(d));
          err2 += d * d;
          ref2 += ref[k] * ref[k];
        }
      }
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (valid[i] == 0 && out[i] != kSentinel) ++e.gaps_changed;
    }
    e.max_rel = max_ref > 0.0 ? max_err / max_ref : max_err;
    e.rel_l2 = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    if (e.non_finite > 0) e.max_rel = e.rel_l2 = std::numeric_limits<double>::infinity();
    return e;
  }

 private:
  struct View {
    int buf = -1;
    std::int64_t offset = 0, ld = 0, batch = 0;
  };

  float& at(const View& v, int b, std::int64_t row, std::int64_t e) {
    return bufs_[static_cast<std::size_t>(v.buf)][static_cast<std::size_t>(v.offset + b * v.batch + row * v.ld + e)];
  }
  float get(const View& v, int b, std::int64_t row, std::int64_t e) const {
    return bufs_[static_cast<std::size_t>(v.buf)][static_cast<std::size_t>(v.offset + b * v.batch + row * v.ld + e)];
  }
  const void* ptr(const View& v) const {
    return static_cast<const char*>(dev_[static_cast<std::size_t>(v.buf)].get()) + v.offset * esize_;
  }

  bool ok(bool cond, const char* what) {
    if (!cond) {
      ADD_FAILURE() << c_.name << ": " << what << " failed";
      ok_ = false;
    }
    return cond;
  }
  bool upload(void* dst, const std::vector<float>& host) {
    cudaError_t err;
    if (act_ == DType::kBF16) {
      std::vector<std::uint16_t> bits(host.size());
      for (std::size_t i = 0; i < host.size(); ++i) bits[i] = float_to_bfloat16(host[i]);
      err = cudaMemcpy(dst, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice);
    } else {
      err = cudaMemcpy(dst, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    }
    return ok(err == cudaSuccess, "upload");
  }
  bool download(std::vector<float>& out) const {
    if (act_ == DType::kBF16) {
      std::vector<std::uint16_t> bits(out.size());
      if (cudaMemcpy(bits.data(), out_dev_.get(), bits.size() * 2, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = bfloat16_to_float(bits[i]);
      return true;
    }
    return cudaMemcpy(out.data(), out_dev_.get(), out.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess;
  }

  // Dense [batch][rows][heads][h] in double: softmax over block a's first a_len keys and block
  // b's first b_limit[r] keys; zeros for a row that sees none.
  std::vector<double> reference(int a_len) const {
    const int H = c_.h, group = c_.heads / c_.kv_heads;
    const int na = c_.a_max == 0 ? 0 : std::clamp(a_len < 0 ? c_.a_max : a_len, 0, c_.a_max);
    const double scale = 1.0 / std::sqrt(static_cast<double>(H));
    std::vector<double> ref(static_cast<std::size_t>(c_.batch) * c_.rows * c_.heads * H, 0.0);
    std::vector<double> s, q(static_cast<std::size_t>(H)), o(static_cast<std::size_t>(H));
    std::vector<std::pair<const View*, int>> keys;
    std::size_t k = 0;
    for (int b = 0; b < c_.batch; ++b) {
      for (int r = 0; r < c_.rows; ++r) {
        const int nb = c_.b_limit.empty() ? c_.b_len : std::clamp(c_.b_limit[static_cast<std::size_t>(r)], 0, c_.b_len);
        for (int hd = 0; hd < c_.heads; ++hd, k += static_cast<std::size_t>(H)) {
          const std::int64_t kvo = std::int64_t{hd / group} * H;
          for (int d = 0; d < H; ++d) q[static_cast<std::size_t>(d)] = get(q_, b, r, std::int64_t{hd} * H + d);
          s.clear();
          auto score = [&](const View& kv, int j) {
            double acc = 0.0;
            for (int d = 0; d < H; ++d) acc += q[static_cast<std::size_t>(d)] * get(kv, b, j, kvo + d);
            s.push_back(acc * scale);
          };
          for (int j = 0; j < na; ++j) score(ak_, j);
          for (int j = 0; j < nb; ++j) score(bk_, j);
          if (s.empty()) continue;
          const double mx = *std::max_element(s.begin(), s.end());
          double sum = 0.0;
          for (double& x : s) sum += (x = std::exp(x - mx));
          std::fill(o.begin(), o.end(), 0.0);
          auto accumulate = [&](const View& kv, int j, double p) {
            for (int d = 0; d < H; ++d) o[static_cast<std::size_t>(d)] += p * get(kv, b, j, kvo + d);
          };
          for (int j = 0; j < na; ++j) accumulate(av_, j, s[static_cast<std::size_t>(j)]);
          for (int j = 0; j < nb; ++j) accumulate(bv_, j, s[static_cast<std::size_t>(na + j)]);
          for (int d = 0; d < H; ++d) ref[k + static_cast<std::size_t>(d)] = o[static_cast<std::size_t>(d)] / sum;
        }
      }
    }
    return ref;
  }

  Case c_;
  DType act_;
  std::size_t esize_;
  bool ok_ = true;
  std::vector<std::vector<float>> bufs_;
  std::vector<DeviceBuffer> dev_;
  View q_, ak_, av_, bk_, bv_;
  std::int64_t ldo_ = 0, o_batch_ = 0, out_elems_ = 0;
  DeviceBuffer out_dev_, a_len_dev_, b_limit_dev_, scratch_;
  AttentionArgs args_;
};

std::vector<int> pi0_limits(int rows, int b_len) {
  std::vector<int> lim(static_cast<std::size_t>(rows), b_len);
  lim[0] = 1;  // the state token sees the prefix and itself only
  return lim;
}

// A vision tower's self-attention (16 heads of 72 dims, every patch its own key, no mask): `views`
// sequences of `patches` rows, padded apart.
[[maybe_unused]] Case tower(int views, int patches) {
  Case c{.name = "tower " + std::to_string(views) + " view(s) " + std::to_string(patches), .batch = views,
         .rows = patches, .heads = 16, .kv_heads = 16, .h = 72};
  c.a_max = patches, c.a_len = -1, c.batch_pad = 8;
  return c;
}

Case gemma_prefix(int rows, int a_len) {
  Case c{.name = "gemma prefix rows " + std::to_string(rows) + " keys " + std::to_string(a_len),
         .rows = rows, .heads = 8, .kv_heads = 1, .h = 256};
  c.a_max = rows;
  c.a_len = a_len;
  return c;
}
Case action_expert(int rows, int a_len, bool pi0) {
  Case c{.name = std::string(pi0 ? "pi0" : "pi0.5") + " action expert prefix " + std::to_string(a_len),
         .rows = rows, .heads = 8, .kv_heads = 1, .h = 256};
  c.a_max = 968;
  c.a_len = a_len;
  c.b_len = rows;
  if (pi0) c.b_limit = pi0_limits(rows, rows);
  return c;
}

void expect_close(const Errors& e, DType act, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(e.non_finite, 0);
  EXPECT_EQ(e.gaps_changed, 0) << "wrote outside the output rows";
  if (act == DType::kF32) {
    EXPECT_LE(e.max_rel, 1e-4) << "rel-L2 " << e.rel_l2;
  } else {
    EXPECT_LE(e.rel_l2, 1e-2) << "max rel " << e.max_rel;
  }
}

void check_case(const Case& c, DType act, bool use_scratch = true, std::size_t scratch_override = 0) {
  Problem p(c, act, use_scratch, scratch_override);
  ASSERT_TRUE(p.ready()) << c.name;
  const Status st = attention(nullptr, p.args());
  ASSERT_TRUE(st.is_ok()) << c.name << ": " << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.name;
  const Errors e = p.compare(c.a_len);
  std::printf("  %-44s %-4s scratch %9zu B  max rel %.2e  rel-L2 %.2e\n", c.name.c_str(),
              act == DType::kBF16 ? "bf16" : "f32", p.args().scratch_bytes, e.max_rel, e.rel_l2);
  expect_close(e, act, c.name);
}

// Captures one call of `c` in a graph, then replays it with *a_len set to each of `lens` and
// checks every replay against the reference at that length.
void check_replays(Case c, DType act, std::initializer_list<int> lens) {
  c.nan_tail = false;
  Problem p(c, act);
  ASSERT_TRUE(p.ready()) << c.name;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status st = attention(stream, p.args());
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int len : lens) {
    p.set_a_len(len);
    p.reset_output();
    // Those pageable copies may return before their bytes land, and `stream` does not wait for
    // the legacy stream they ran on.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    expect_close(p.compare(len), act, c.name + " replayed with a_len " + std::to_string(len) +
                                          (act == DType::kBF16 ? " bf16" : " f32"));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace edgevla::backends::cuda
