// Helpers shared by the pre-processing tests: scratch folders, files, and running the Python
// reference (tests/reference/preprocess_ref.py) or a command-line tool.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_util.hpp"

namespace edgevla::model::test {

namespace fs = std::filesystem;

// Debian's interpreter, which has python3-pil, python3-numpy and python3-sentencepiece (a
// python3 earlier on PATH may not).
inline constexpr const char* kPython = "/usr/bin/python3";

inline std::string reference_script() {
  return edgevla::testing::source_dir() + "/tests/reference/preprocess_ref.py";
}

// A fresh folder under the test temp dir, removed by the destructor.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag)
      : path_(fs::path(::testing::TempDir()) / edgevla::testing::unique_domain(tag)) {
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Single-quotes `s` for /bin/sh (a literal newline inside quotes stays one argument).
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; returns its exit code (-1 when it did not exit normally). Its output
// goes to `log` so a failure can print it.
inline int run_command(const std::string& command, const std::string& log) {
  const int rc = std::system((command + " >" + shell_quote(log) + " 2>&1").c_str());
  return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace edgevla::model::test
