// Tensor: dtype + shape + strides + a reference-counted buffer and byte offset.
// Views (reshape, slice, select) share the buffer; handing a tensor to another node copies
// nothing but the shared_ptr.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/buffer.hpp"
#include "runtime/core/dtype.hpp"

namespace edgevla {

// Fixed-capacity list of dimensions (no heap allocation per tensor).
class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  // For literals in code; more than kMaxRank dims is a programming error (asserts).
  Shape(std::initializer_list<std::int64_t> dims);
  // Checked construction for dims that come from outside (wire, files).
  static Expected<Shape> from(std::span<const std::int64_t> dims);

  int rank() const { return rank_; }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }
  std::span<const std::int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }
  // Product of dims (1 for rank 0).
  std::int64_t numel() const;
  bool operator==(const Shape& other) const;
  // "[480,640,3]"
  std::string to_string() const;

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Row-major strides (in elements) for a shape.
Shape contiguous_strides(const Shape& shape);

// Bytes a contiguous tensor of `shape` needs, or an error for negative or absurd dims.
Expected<std::size_t> checked_nbytes(DType dtype, const Shape& shape);

class Tensor final {
 public:
  Tensor() = default;

  // Uninitialised tensor on `device`, from that device's allocator.
  static Expected<Tensor> empty(DType dtype, const Shape& shape, Device device = Device::cpu());
  // Views an existing buffer; checks that every addressed byte lies inside it.
  static Expected<Tensor> from_buffer(BufferPtr buffer, DType dtype, const Shape& shape,
                                      std::optional<Shape> strides = std::nullopt,
                                      std::size_t offset_bytes = 0);
  // Copies host values into a new heap tensor (tests, small constants).
  template <class T>
  static Expected<Tensor> from_values(std::span<const T> values, const Shape& shape) {
    return from_bytes(DTypeOf<T>::value, shape, std::as_bytes(values));
  }
  static Expected<Tensor> from_bytes(DType dtype, const Shape& shape,
                                     std::span<const std::byte> bytes);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int rank() const { return shape_.rank(); }
  std::size_t offset() const { return offset_; }
  const BufferPtr& buffer() const { return buffer_; }
  Device device() const { return buffer_ ? buffer_->device() : Device::cpu(); }

  std::int64_t numel() const { return shape_.numel(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;

  std::byte* raw_data() const { return buffer_->data() + offset_; }
  template <class T>
  T* data() const {
    return reinterpret_cast<T*>(raw_data());
  }
  // The bytes of a contiguous tensor (empty span for a strided one).
  std::span<const std::byte> bytes() const;
  std::span<std::byte> mutable_bytes() const;

  Expected<Tensor> reshape(const Shape& shape) const;
  // Elements [start, stop) along `dim`.
  Expected<Tensor> slice(int dim, std::int64_t start, std::int64_t stop) const;
  // Index `index` along `dim`, dropping that dim.
  Expected<Tensor> select(int dim, std::int64_t index) const;
  // This tensor when already contiguous, else a contiguous heap copy.
  Expected<Tensor> contiguous() const;
  // A deep copy into a new heap buffer.
  Expected<Tensor> clone() const;
  // This tensor on `device`: itself when already there, else a contiguous copy made through the
  // device's allocator (host <-> device; a strided device tensor is refused by name).
  Expected<Tensor> to(Device device) const;

  // "u8[480,640,3] shm"
  std::string describe() const;

 private:
  DType dtype_ = DType::kU8;
  Shape shape_;
  Shape strides_;
  std::size_t offset_ = 0;
  BufferPtr buffer_;
};

struct TensorSummary {
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  std::int64_t non_finite = 0;  // NaN/Inf count (floating dtypes)
};

// Min/max/mean over all elements of a CPU tensor (any layout).
Expected<TensorSummary> summarize(const Tensor& tensor);

// Reads one element as double (for summaries and checks; not a hot path).
double element_as_double(DType dtype, const std::byte* p);

}  // namespace edgevla
