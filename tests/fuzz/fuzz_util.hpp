// Helpers shared by the fuzz targets: property checks that abort with a message (libFuzzer then
// keeps the input), a memory-backed file for decoders that take a path, and a scratch folder
// for decoders that follow relative paths (launch includes, params files, tokenizer files).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

namespace edgevla::fuzz {

[[noreturn]] inline void property_violated(const char* target, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: property violated: %s %s\n", target, what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// Every target defines kTarget (its name) before using FUZZ_CHECK.
#define FUZZ_CHECK(cond, detail)                                                  \
  do {                                                                            \
    if (!(cond)) ::edgevla::fuzz::property_violated(kTarget, #cond, (detail));    \
  } while (0)

// A file that lives in memory (memfd), rewritten for each input and opened by path
// (/proc/self/fd/N), so a decoder that maps a path reads exactly the input and nothing is
// left on disk.
class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the file's content with `bytes`; returns the path to open.
  const std::string& write(std::span<const std::uint8_t> bytes) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

// A private scratch folder under $TMPDIR (default /tmp), removed when the process exits
// normally (libFuzzer's -runs/-max_total_time end with exit()). A crash leaves it for
// inspection.
class ScratchDir {
 public:
  explicit ScratchDir(const char* target) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/edgevla-" + target + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `bytes` to `name` inside the folder and returns its path. The old file is removed
  // first: on ext4, truncating a file that holds data makes close() write it back to disk,
  // which cost a launch input more than parsing it.
  std::string write(const std::string& name, std::string_view bytes) const {
    const auto p = path_ / name;
    ::unlink(p.c_str());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", p.c_str());
      std::abort();
    }
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

// Splits `in` at the first `n - 1` occurrences of `sep` (a separator a seed writes between
// the files of one input); missing parts are empty.
template <std::size_t N>
std::array<std::string_view, N> split_parts(std::string_view in, std::string_view sep) {
  std::array<std::string_view, N> out{};
  for (std::size_t i = 0; i + 1 < N; ++i) {
    const auto at = in.find(sep);
    if (at == std::string_view::npos) {
      out[i] = in;
      return out;
    }
    out[i] = in.substr(0, at);
    in.remove_prefix(at + sep.size());
  }
  out[N - 1] = in;
  return out;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace edgevla::fuzz
