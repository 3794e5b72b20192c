// What the cuda pi0 / pi0.5 engine tests share: a backbone and action head opened as a pair on
// one backend, the seeded bf16 checkpoints they load (one per preset and model type, generated
// once a process, removed at its exit), and pairs opened with environment variables set while
// the engines are made.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/backends/backend.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends::test {

struct Pair {
  std::shared_ptr<const model::pi0::Pi0Model> model;
  std::unique_ptr<Engine> backbone, head;
};

inline const std::string& checkpoint(const std::string& preset, model::ModelType type) {
  static GeneratedDirs generated;  // removed at exit
  return generated.get(preset + std::string(model::model_type_name(type)), [&](const std::string& dir) {
    model::GenerateOptions g;
    g.config = *model::preset_config(preset, type);
    g.seed = 21;
    g.dtype = DType::kBF16;  // bf16 weights: both backends compute with the same stored values
    EXPECT_OK(model::generate_checkpoint(g, dir));
  });
}

inline Expected<Pair> open(const std::string& dir, std::string_view backend, Precision precision, std::int64_t budget = 0) {
  Pair p;
  EDGEVLA_ASSIGN_OR_RETURN(model::Checkpoint ck, model::Checkpoint::open(dir));
  p.model = std::make_shared<const model::pi0::Pi0Model>(std::move(ck));
  EDGEVLA_ASSIGN_OR_RETURN(auto b, make_backend(backend));
  EngineOptions o;
  o.threads = 2;
  o.device = backend == "cpu" ? "cpu" : "cuda:0";
  o.precision = precision;
  o.memory_budget_bytes = budget;
  EDGEVLA_ASSIGN_OR_RETURN(p.backbone, b->create(*p.model, model::kBackbone, o));
  EDGEVLA_ASSIGN_OR_RETURN(p.head, b->create(*p.model, model::kActionHead, o));
  return p;
}

// A bf16 cuda pair opened with environment variables set (then unset): engines read them when made.
inline Expected<Pair> open_with(const std::string& dir, std::initializer_list<std::pair<const char*, const char*>> vars) {
  for (const auto& [var, value] : vars) ::setenv(var, value, 1);
  auto p = open(dir, "cuda", Precision::kBF16);
  for (const auto& [var, value] : vars) ::unsetenv(var);
  return p;
}
inline Expected<Pair> open_with(const std::string& dir, const char* var, const char* value) {
  return open_with(dir, {{var, value}});
}

}  // namespace edgevla::backends::test
