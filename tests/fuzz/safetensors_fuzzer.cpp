// libFuzzer target for the safetensors reader (runtime/model/safetensors.cpp): the 8-byte
// header length, the JSON header and the tensor table.
//
// Each input is a whole file, opened as a checkpoint load does. Properties: no crash, hang,
// leak or UB; a rejected file gets a message; every entry of an accepted file yields a tensor
// of its dtype and shape whose bytes lie inside the file, and every byte is readable.
//
// Seeds (tests/fuzz/corpus/safetensors/): files written by write_safetensors (every dtype,
// scalars, empty tensors, metadata) and hand-made broken headers.
#include <cstdint>
#include <span>
#include <string>

#include "runtime/core/tensor.hpp"
#include "runtime/model/safetensors.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {
constexpr const char* kTarget = "safetensors_fuzzer";
volatile std::uint8_t g_sink;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace edgevla;
  static fuzz::MemFile file("safetensors_fuzzer");
  auto f = model::SafetensorsFile::open(file.write({data, size}));
  if (!f) {
    FUZZ_CHECK(!f.status().message().empty(), "");
    return 0;
  }
  FUZZ_CHECK(f->file_size() == size, "");
  for (const auto& [key, value] : f->metadata()) g_sink = static_cast<std::uint8_t>(key.size() + value.size());
  for (const model::SafetensorsEntry& e : f->entries()) {
    FUZZ_CHECK(f->find(e.name) != nullptr, e.name);
    auto t = f->tensor(e.name);
    FUZZ_CHECK(t.has_value(), t.status().to_string());
    FUZZ_CHECK(t->dtype() == e.dtype && t->shape() == e.shape, e.name);
    const auto bytes = t->bytes();
    FUZZ_CHECK(bytes.size() == e.end - e.begin, e.name);
    FUZZ_CHECK(bytes.empty() || (bytes.data() >= f->mapped_bytes().data() &&
                                 bytes.data() + bytes.size() <= f->mapped_bytes().data() + size),
               e.name);
    std::uint8_t acc = 0;
    for (std::byte b : bytes) acc ^= static_cast<std::uint8_t>(b);
    g_sink = acc;
    auto summary = summarize(*t);
    FUZZ_CHECK(summary.has_value(), summary.status().to_string());
  }
  return 0;
}
