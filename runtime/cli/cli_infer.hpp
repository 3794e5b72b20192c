// `edgevla infer`: the whole policy once on image files, a prompt and a state, without a graph
// (docs/infer.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace edgevla::cli {

class InferCommand final {
 public:
  void add(CLI::App& app);
  // The exit code of `edgevla infer` when it was parsed (0, 2 for bad input, 1 for an internal
  // failure), or -1 when it was not.
  int run();

 private:
  int infer();

  CLI::App* infer_ = nullptr;
  std::string checkpoint_, prompt_, state_, out_, backend_ = "cpu", precision_ = "auto";
  std::vector<std::string> images_;  // SLOT=PATH
  std::uint64_t seed_ = 0;
  int steps_ = 0, threads_ = 0, cuda_device_ = 0;
  bool truncate_ = false;
};

}  // namespace edgevla::cli
