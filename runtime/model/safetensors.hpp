// Safetensors files: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw bytes. SafetensorsFile maps the file read-only and
// hands out tensors that view the mapping (never a heap copy); write_safetensors streams a file
// tensor by tensor, so a multi-gigabyte checkpoint is written without holding it in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"

namespace edgevla {
class Progress;
}

namespace edgevla::model {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  std::uint64_t begin = 0;  // byte offsets inside the data section
  std::uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Maps `path` and checks the header: every entry's dtype is known, its byte range matches
  // its shape and lies inside the file, and its offset suits the element size.
  static Expected<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent.
  const SafetensorsEntry* find(std::string_view name) const;
  // A read-only tensor viewing the mapped bytes; not_found names the file.
  Expected<Tensor> tensor(std::string_view name) const;
  std::uint64_t file_size() const { return mapping_ ? mapping_->size() : 0; }
  // The whole mapped file (read-only), e.g. to drop its pages once a GPU holds the weights.
  std::span<const std::byte> mapped_bytes() const {
    return mapping_ ? std::span<const std::byte>(mapping_->data(), mapping_->size()) : std::span<const std::byte>();
  }

 private:
  std::string path_;
  BufferPtr mapping_;
  std::uint64_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// The safetensors name of a dtype ("F32", "BF16", ...).
std::string_view safetensors_dtype_name(DType dtype);

struct WriteEntry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};

// Fills the bytes of one entry (exactly nbytes of it).
using FillFn = std::function<Status(const WriteEntry& entry, std::span<std::byte> out)>;

// Writes entries (names must be unique; data ordered by falling element size, names kept in
// the given order otherwise, so each tensor is aligned to its elements). With `fill` null the data section is
// left as a hole (a sparse file of zeros): for tests of loaders at real model sizes.
// `progress`, when given, advances by each tensor's bytes as it is written.
Status write_safetensors(const std::string& path, const std::vector<WriteEntry>& entries,
                         const std::map<std::string, std::string>& metadata, const FillFn& fill,
                         Progress* progress = nullptr);

}  // namespace edgevla::model
