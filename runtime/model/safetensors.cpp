#include "runtime/model/safetensors.hpp"
#include "runtime/util/progress.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

namespace edgevla::model {
namespace {

using Json = nlohmann::json;

constexpr std::uint64_t kMaxHeader = 100ull << 20;  // the format's own limit

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"BOOL", DType::kBool}, {"U8", DType::kU8},   {"I8", DType::kI8},     {"U16", DType::kU16},
    {"I16", DType::kI16},   {"U32", DType::kU32}, {"I32", DType::kI32},   {"U64", DType::kU64},
    {"I64", DType::kI64},   {"F16", DType::kF16}, {"BF16", DType::kBF16}, {"F32", DType::kF32},
    {"F64", DType::kF64},
};

Expected<DType> dtype_from_name(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (d.name == name) return d.dtype;
  }
  return invalid_argument("dtype '" + std::string(name) +
                          "' is not supported (edgevla reads BOOL, U8..U64, I8..I64, F16, BF16, "
                          "F32, F64; convert float8 checkpoints to bf16 first)");
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  auto mapping = Buffer::map_file(path);
  if (!mapping) return mapping.status();
  f.mapping_ = std::move(*mapping);
  const std::uint64_t size = f.mapping_->size();
  auto corrupt = [&](const std::string& why) {
    return data_loss("safetensors file '" + path + "' is unreadable: " + why +
                     " (re-export or re-copy the file; a partial download looks like this)");
  };
  if (size < 8) return corrupt("it is " + std::to_string(size) + " bytes, shorter than its 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) {
    header_len = header_len << 8 | static_cast<std::uint8_t>(f.mapping_->data()[i]);
  }
  if (header_len > kMaxHeader || header_len > size - 8) {
    return corrupt("its header claims " + std::to_string(header_len) + " bytes but the file has " +
                   std::to_string(size - 8) + " after the length");
  }
  f.data_start_ = 8 + header_len;
  const std::uint64_t data_size = size - f.data_start_;
  Json header;
  try {
    header = Json::parse(reinterpret_cast<const char*>(f.mapping_->data()) + 8,
                         reinterpret_cast<const char*>(f.mapping_->data()) + f.data_start_);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    return corrupt(std::string("its JSON header does not parse: ") + e.what());
  }
  if (!header.is_object()) return corrupt("its header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return corrupt("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return corrupt("__metadata__ value '" + m.key() + "' is not a string");
        f.metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const Json& e = *it;
    const std::string name = it.key();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets")) {
      return corrupt("entry '" + name + "' lacks dtype, shape or data_offsets");
    }
    if (!e["dtype"].is_string()) return corrupt("entry '" + name + "' dtype is not a string");
    auto dtype = dtype_from_name(e["dtype"].get<std::string>());
    if (!dtype) return dtype.status().with_context("safetensors file '" + path + "', tensor '" + name + "'");
    std::vector<std::int64_t> dims;
    if (!e["shape"].is_array()) return corrupt("entry '" + name + "' shape is not a list");
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned()) return corrupt("entry '" + name + "' has a non-integer dimension");
      dims.push_back(d.get<std::int64_t>());
    }
    auto shape = Shape::from(dims);
    if (!shape) return shape.status().with_context("safetensors file '" + path + "', tensor '" + name + "'");
    const Json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      return corrupt("entry '" + name + "' data_offsets is not [begin, end]");
    }
    SafetensorsEntry entry{name, *dtype, *shape, off[0].get<std::uint64_t>(), off[1].get<std::uint64_t>()};
    auto nbytes = checked_nbytes(entry.dtype, entry.shape);
    if (!nbytes) return nbytes.status().with_context("safetensors file '" + path + "', tensor '" + name + "'");
    if (entry.end < entry.begin || entry.end - entry.begin != *nbytes) {
      return corrupt("tensor '" + name + "' " + entry.shape.to_string() + " needs " +
                     std::to_string(*nbytes) + " bytes but its data_offsets span " +
                     std::to_string(entry.end - entry.begin));
    }
    if (entry.end > data_size) {
      return corrupt("tensor '" + name + "' ends at byte " + std::to_string(entry.end) +
                     " of a data section of " + std::to_string(data_size) + " bytes (truncated file)");
    }
    if ((f.data_start_ + entry.begin) % dtype_size(entry.dtype) != 0) {
      return corrupt("tensor '" + name + "' starts at an offset not aligned to its " +
                     std::to_string(dtype_size(entry.dtype)) + "-byte elements");
    }
    f.index_[name] = f.entries_.size();
    f.entries_.push_back(std::move(entry));
  }
  return f;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Expected<Tensor> SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsEntry* e = find(name);
  if (e == nullptr) return not_found("tensor '" + std::string(name) + "' is not in '" + path_ + "'");
  return Tensor::from_buffer(mapping_, e->dtype, e->shape, std::nullopt, data_start_ + e->begin);
}

Status write_safetensors(const std::string& path, const std::vector<WriteEntry>& entries,
                         const std::map<std::string, std::string>& metadata, const FillFn& fill,
                         Progress* progress) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::vector<std::uint64_t> sizes;
  for (const WriteEntry& e : entries) {
    if (!names.insert(e.name).second) return invalid_argument("tensor '" + e.name + "' is written twice");
    auto nbytes = checked_nbytes(e.dtype, e.shape);
    if (!nbytes) return nbytes.status().with_context("tensor '" + e.name + "'");
    sizes.push_back(*nbytes);
  }
  // Data in order of falling element size, so every tensor starts aligned to its elements.
  std::vector<std::size_t> order(entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return dtype_size(entries[a].dtype) > dtype_size(entries[b].dtype);
  });
  std::uint64_t offset = 0;
  for (std::size_t i : order) {
    const WriteEntry& e = entries[i];
    std::vector<std::int64_t> dims(e.shape.dims().begin(), e.shape.dims().end());
    header[e.name] = {{"dtype", safetensors_dtype_name(e.dtype)},
                      {"shape", dims},
                      {"data_offsets", {offset, offset + sizes[i]}}};
    offset += sizes[i];
  }
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned, as other writers do.
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::string tmp = path + ".partial";
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) {
    return unavailable("cannot create '" + tmp + "': " + std::strerror(errno));
  }
  auto fail = [&](Status s) {
    std::fclose(out);
    std::remove(tmp.c_str());
    return s;
  };
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(text.size() >> (8 * i));
  if (std::fwrite(len, 1, 8, out) != 8 || std::fwrite(text.data(), 1, text.size(), out) != text.size()) {
    return fail(unavailable("cannot write '" + tmp + "': " + std::strerror(errno)));
  }
  if (fill) {
    std::vector<std::byte> buf;
    for (std::size_t i : order) {
      buf.assign(sizes[i], std::byte{0});
      if (Status s = fill(entries[i], buf); !s.is_ok()) return fail(s.with_context("tensor '" + entries[i].name + "'"));
      if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size()) {
        return fail(unavailable("cannot write '" + tmp + "': " + std::strerror(errno)));
      }
      if (progress != nullptr) progress->add(static_cast<std::int64_t>(buf.size()));
    }
  } else {
    std::fflush(out);
    const off_t total = static_cast<off_t>(8 + text.size() + offset);
    if (::ftruncate(::fileno(out), total) != 0) {
      return fail(unavailable("cannot size '" + tmp + "': " + std::strerror(errno)));
    }
    if (progress != nullptr) progress->add(static_cast<std::int64_t>(offset));
  }
  if (std::fclose(out) != 0) {
    std::remove(tmp.c_str());
    return unavailable("cannot finish '" + tmp + "': " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return unavailable("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace edgevla::model
