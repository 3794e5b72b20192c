#include "runtime/core/tensor.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace edgevla {

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  assert(dims.size() <= kMaxRank);
  for (auto d : dims) dims_[static_cast<std::size_t>(rank_++)] = d;
}

Expected<Shape> Shape::from(std::span<const std::int64_t> dims) {
  if (dims.size() > kMaxRank) {
    return invalid_argument("rank " + std::to_string(dims.size()) + " exceeds the maximum of " +
                            std::to_string(kMaxRank));
  }
  Shape s;
  for (auto d : dims) {
    if (d < 0) return invalid_argument("negative dimension " + std::to_string(d));
    s.dims_[static_cast<std::size_t>(s.rank_++)] = d;
  }
  return s;
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (auto d : dims()) n *= d;
  return n;
}

bool Shape::operator==(const Shape& other) const {
  return rank_ == other.rank_ && std::equal(dims().begin(), dims().end(), other.dims().begin());
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[static_cast<std::size_t>(i)]);
  }
  return s + "]";
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides = shape;
  std::int64_t step = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

namespace {

// Largest byte offset (exclusive) addressed by a view; 0 for an empty tensor.
Expected<std::size_t> extent_bytes(const Shape& shape, const Shape& strides, DType dtype) {
  constexpr std::int64_t kLimit = std::numeric_limits<std::int64_t>::max() / 16;
  std::int64_t last = 0;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] == 0) return std::size_t{0};
    if (strides[i] < 0) return invalid_argument("negative stride " + std::to_string(strides[i]));
    if (shape[i] > kLimit || (strides[i] != 0 && (shape[i] - 1) > kLimit / std::max<std::int64_t>(strides[i], 1))) {
      return invalid_argument("shape " + shape.to_string() + " is too large");
    }
    last += (shape[i] - 1) * strides[i];
    if (last > kLimit) return invalid_argument("shape " + shape.to_string() + " is too large");
  }
  return static_cast<std::size_t>(last + 1) * dtype_size(dtype);
}

}  // namespace

Expected<std::size_t> checked_nbytes(DType dtype, const Shape& shape) {
  constexpr std::int64_t kMaxBytes = std::int64_t{1} << 46;  // 64 TiB: far beyond any real tensor
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(dtype));
  bool empty = false;
  for (auto d : shape.dims()) {
    if (d < 0) return invalid_argument("negative dimension in shape " + shape.to_string());
    if (d == 0) {
      empty = true;
      continue;
    }
    if (bytes > kMaxBytes / d) {
      return invalid_argument("shape " + shape.to_string() + " of " + std::string(dtype_name(dtype)) +
                              " is too large to allocate");
    }
    bytes *= d;
  }
  return empty ? std::size_t{0} : static_cast<std::size_t>(bytes);
}

Expected<Tensor> Tensor::empty(DType dtype, const Shape& shape, Device device) {
  EDGEVLA_ASSIGN_OR_RETURN(std::size_t bytes, checked_nbytes(dtype, shape));
  EDGEVLA_ASSIGN_OR_RETURN(Allocator * alloc, allocator_for(device));
  EDGEVLA_ASSIGN_OR_RETURN(BufferPtr buffer, alloc->allocate_on(device.index, bytes));
  return from_buffer(std::move(buffer), dtype, shape);
}

Expected<Tensor> Tensor::to(Device target) const {
  if (!defined()) return invalid_argument("copy of an undefined tensor to " + target.to_string());
  if (device() == target) return *this;
  if (!device().is_cpu() && !target.is_cpu()) {
    return failed_precondition("copy of " + describe() + " from " + device().to_string() + " to " + target.to_string() +
                         ": only host <-> device copies are supported");
  }
  if (!device().is_cpu() && !is_contiguous()) {
    return failed_precondition("copy of the strided " + describe() + " off " + device().to_string() +
                         ": make it contiguous on the device first");
  }
  if (!device().is_cpu()) EDGEVLA_RETURN_IF_ERROR(buffer_->wait_ready().with_context("copy of " + describe()));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor src, contiguous());  // host side: a strided view is packed here
  EDGEVLA_ASSIGN_OR_RETURN(Tensor out, empty(dtype_, shape_, target));
  const Device dev = target.is_cpu() ? device() : target;
  EDGEVLA_ASSIGN_OR_RETURN(Allocator * alloc, allocator_for(dev));
  EDGEVLA_RETURN_IF_ERROR(alloc->copy(out.raw_data(), src.raw_data(), nbytes(),
                                      target.is_cpu() ? CopyKind::kToHost : CopyKind::kFromHost));
  return out;
}

Expected<Tensor> Tensor::from_buffer(BufferPtr buffer, DType dtype, const Shape& shape,
                                     std::optional<Shape> strides, std::size_t offset_bytes) {
  if (!buffer) return invalid_argument("tensor view of a null buffer");
  for (auto d : shape.dims()) {
    if (d < 0) return invalid_argument("negative dimension in shape " + shape.to_string());
  }
  Shape st = strides ? *strides : contiguous_strides(shape);
  if (st.rank() != shape.rank()) {
    return invalid_argument("strides " + st.to_string() + " do not match shape " +
                            shape.to_string());
  }
  if (offset_bytes % dtype_size(dtype) != 0) {
    return invalid_argument("offset " + std::to_string(offset_bytes) + " is not a multiple of " +
                            std::string(dtype_name(dtype)) + " size");
  }
  EDGEVLA_ASSIGN_OR_RETURN(std::size_t extent, extent_bytes(shape, st, dtype));
  if (offset_bytes > buffer->size() || extent > buffer->size() - offset_bytes) {
    return out_of_range(std::string(dtype_name(dtype)) + shape.to_string() + " at offset " +
                        std::to_string(offset_bytes) + " needs " + std::to_string(extent) +
                        " bytes but the buffer holds " + std::to_string(buffer->size()));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = st;
  t.offset_ = offset_bytes;
  t.buffer_ = std::move(buffer);
  return t;
}

Expected<Tensor> Tensor::from_bytes(DType dtype, const Shape& shape,
                                    std::span<const std::byte> bytes) {
  EDGEVLA_ASSIGN_OR_RETURN(std::size_t need, checked_nbytes(dtype, shape));
  if (bytes.size() != need) {
    return invalid_argument(std::string(dtype_name(dtype)) + shape.to_string() + " needs " +
                            std::to_string(need) + " bytes, got " + std::to_string(bytes.size()));
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, empty(dtype, shape));
  if (need) std::memcpy(t.raw_data(), bytes.data(), need);
  return t;
}

bool Tensor::is_contiguous() const {
  std::int64_t step = 1;
  for (int i = shape_.rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != step) return false;
    step *= shape_[i];
  }
  return true;
}

std::span<const std::byte> Tensor::bytes() const {
  if (!defined() || !is_contiguous()) return {};
  return {raw_data(), nbytes()};
}

std::span<std::byte> Tensor::mutable_bytes() const {
  if (!defined() || !is_contiguous() || !buffer_->writable()) return {};
  return {raw_data(), nbytes()};
}

Expected<Tensor> Tensor::reshape(const Shape& shape) const {
  if (shape.numel() != numel()) {
    return invalid_argument("cannot reshape " + shape_.to_string() + " to " + shape.to_string() +
                            ": element counts differ");
  }
  if (!is_contiguous()) {
    return invalid_argument("cannot reshape a strided view " + describe() +
                            "; call contiguous() first");
  }
  return from_buffer(buffer_, dtype_, shape, std::nullopt, offset_);
}

Expected<Tensor> Tensor::slice(int dim, std::int64_t start, std::int64_t stop) const {
  if (dim < 0 || dim >= rank()) {
    return out_of_range("slice dim " + std::to_string(dim) + " out of range for " + describe());
  }
  if (start < 0 || stop < start || stop > shape_[dim]) {
    return out_of_range("slice [" + std::to_string(start) + "," + std::to_string(stop) +
                        ") out of range for dim " + std::to_string(dim) + " of " + describe());
  }
  Shape s = shape_;
  s[dim] = stop - start;
  const auto off = offset_ + static_cast<std::size_t>(start * strides_[dim]) * dtype_size(dtype_);
  return from_buffer(buffer_, dtype_, s, strides_, off);
}

Expected<Tensor> Tensor::select(int dim, std::int64_t index) const {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor one, slice(dim, index, index + 1));
  std::vector<std::int64_t> dims, strides;
  for (int i = 0; i < rank(); ++i) {
    if (i == dim) continue;
    dims.push_back(one.shape_[i]);
    strides.push_back(one.strides_[i]);
  }
  EDGEVLA_ASSIGN_OR_RETURN(Shape s, Shape::from(dims));
  EDGEVLA_ASSIGN_OR_RETURN(Shape st, Shape::from(strides));
  return from_buffer(buffer_, dtype_, s, st, one.offset_);
}

Expected<Tensor> Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Expected<Tensor> Tensor::clone() const {
  if (!defined()) return invalid_argument("clone of an undefined tensor");
  if (!device().is_cpu()) {
    return failed_precondition("clone of " + describe() + " on " + device().to_string() +
                               " needs that device's backend");
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor out, empty(dtype_, shape_));
  const std::size_t esize = dtype_size(dtype_);
  if (is_contiguous()) {
    if (nbytes()) std::memcpy(out.raw_data(), raw_data(), nbytes());
    return out;
  }
  // Generic strided copy: walk a multi-index in row-major order.
  std::array<std::int64_t, Shape::kMaxRank> idx{};
  std::byte* dst = out.raw_data();
  const std::int64_t n = numel();
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t src_off = 0;
    for (int d = 0; d < rank(); ++d) src_off += idx[static_cast<std::size_t>(d)] * strides_[d];
    std::memcpy(dst + static_cast<std::size_t>(e) * esize,
                raw_data() + static_cast<std::size_t>(src_off) * esize, esize);
    for (int d = rank() - 1; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < shape_[d]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
  return out;
}

std::string Tensor::describe() const {
  if (!defined()) return "<undefined tensor>";
  std::string s = std::string(dtype_name(dtype_)) + shape_.to_string() + " " +
                  std::string(buffer_kind_name(buffer_->kind()));
  if (!device().is_cpu()) s += " " + device().to_string();
  return s;
}

double element_as_double(DType dtype, const std::byte* p) {
  auto rd = [p]<class T>(T*) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<double>(v);
  };
  switch (dtype) {
    case DType::kBool: return static_cast<double>(static_cast<std::uint8_t>(*p) != 0);
    case DType::kU8: return rd(static_cast<std::uint8_t*>(nullptr));
    case DType::kI8: return rd(static_cast<std::int8_t*>(nullptr));
    case DType::kU16: return rd(static_cast<std::uint16_t*>(nullptr));
    case DType::kI16: return rd(static_cast<std::int16_t*>(nullptr));
    case DType::kU32: return rd(static_cast<std::uint32_t*>(nullptr));
    case DType::kI32: return rd(static_cast<std::int32_t*>(nullptr));
    case DType::kU64: return rd(static_cast<std::uint64_t*>(nullptr));
    case DType::kI64: return rd(static_cast<std::int64_t*>(nullptr));
    case DType::kF16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return half_to_float(b);
    }
    case DType::kBF16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return bfloat16_to_float(b);
    }
    case DType::kF32: return rd(static_cast<float*>(nullptr));
    case DType::kF64: return rd(static_cast<double*>(nullptr));
  }
  return 0.0;
}

Expected<TensorSummary> summarize(const Tensor& t) {
  if (!t.defined()) return invalid_argument("summary of an undefined tensor");
  if (!t.device().is_cpu()) {
    return failed_precondition("summary of " + t.describe() + " needs a CPU tensor");
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor c, t.contiguous());
  TensorSummary s;
  const std::int64_t n = c.numel();
  if (n == 0) return s;
  const std::size_t esize = dtype_size(c.dtype());
  double sum = 0.0;
  std::int64_t finite = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = element_as_double(c.dtype(), c.raw_data() + static_cast<std::size_t>(i) * esize);
    if (!std::isfinite(v)) {
      ++s.non_finite;
      continue;
    }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
    ++finite;
  }
  if (finite == 0) {
    s.min = s.max = s.mean = std::nan("");
  } else {
    s.mean = sum / static_cast<double>(finite);
  }
  return s;
}

}  // namespace edgevla
