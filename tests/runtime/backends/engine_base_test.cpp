// EngineBase's slot lookups: an engine finds each tensor its family's stage spec declares, and
// one the spec does not declare is an internal error naming the tensor, the backend, family and
// stage (the engine and its family out of step), not an index of -1 used later.
#include "runtime/backends/engine_base.hpp"

#include <gtest/gtest.h>

#include <string>

namespace edgevla::backends {
namespace {

class SpecOnlyEngine final : public EngineBase {
 public:
  explicit SpecOnlyEngine(const model::StageSpec& spec) : EngineBase("cpu", "fam", spec, DeviceType::kCpu) {}
  Status run(const RunOptions&) override { return Status::ok(); }
  std::string describe() const override { return "spec only"; }
  std::int64_t resident_bytes() const override { return 0; }
  std::int64_t device_bytes() const override { return 0; }
  using EngineBase::input_slot;
  using EngineBase::output_slot;
};

model::StageSpec spec() {
  model::StageSpec s;
  s.name = "action_head";
  s.inputs.push_back(model::TensorSpec{.name = "kv", .max_shape = Shape{4}});
  s.inputs.push_back(model::TensorSpec{.name = "noise", .max_shape = Shape{2, 3}});
  s.outputs.push_back(model::TensorSpec{.name = "actions", .max_shape = Shape{2, 3}});
  return s;
}

TEST(EngineBaseSlots, FindDeclaredTensorsInSpecOrder) {
  const SpecOnlyEngine e(spec());
  auto kv = e.input_slot("kv");
  auto noise = e.input_slot("noise");
  auto actions = e.output_slot("actions");
  ASSERT_TRUE(kv && noise && actions);
  EXPECT_EQ(*kv, 0);
  EXPECT_EQ(*noise, 1);
  EXPECT_EQ(*actions, 0);
}

TEST(EngineBaseSlots, AnUndeclaredTensorIsAnErrorNamingIt) {
  const SpecOnlyEngine e(spec());
  auto in = e.input_slot("state");
  ASSERT_FALSE(in);
  const std::string m = in.status().to_string();
  EXPECT_NE(m.find("'state'"), std::string::npos) << m;
  EXPECT_NE(m.find("cpu fam action_head"), std::string::npos) << m;
  EXPECT_NE(m.find("input"), std::string::npos) << m;
  // An output's name is not an input, nor the other way round.
  EXPECT_FALSE(e.input_slot("actions"));
  auto out = e.output_slot("noise");
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().to_string().find("output 'noise'"), std::string::npos) << out.status().to_string();
}

}  // namespace
}  // namespace edgevla::backends
