// `edgevla model ...` subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace edgevla::cli {

class ModelCommands {
 public:
  void add(CLI::App& app);
  // The exit code of the model command that was parsed, or -1 when none was.
  int run();

 private:
  int init();
  int init_groot();
  int info();
  int info_groot();  // cli_model_groot.cpp
  int forward();

  CLI::App* init_ = nullptr;
  CLI::App* info_ = nullptr;
  CLI::App* forward_ = nullptr;
  std::string family_ = "pi0", config_, type_ = "pi05", out_, dtype_, checkpoint_, inputs_, backend_ = "cpu",
              precision_ = "auto";
  std::uint64_t seed_ = 0;
  bool dry_run_ = false;
  std::vector<int> masked_;
  int prompt_tokens_ = 12, steps_ = 0, threads_ = 0, repeat_ = 1, cuda_device_ = 0;
};

}  // namespace edgevla::cli
