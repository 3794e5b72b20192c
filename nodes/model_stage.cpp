#include "nodes/model_stage.hpp"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "runtime/bag/replay.hpp"
#include "runtime/model/safetensors.hpp"

namespace edgevla::nodes {

std::int64_t stage_weight_bytes(const model::SafetensorsFile& file, backends::Stage stage) {
  constexpr std::string_view kPrefixModel = "paligemma_with_expert.paligemma.";
  std::int64_t bytes = 0;
  for (const auto& e : file.entries()) {
    if (e.name == model::kExpertLmHead) continue;
    const bool prefix_model = e.name.starts_with(kPrefixModel);
    if (prefix_model == (stage == backends::Stage::kBackbone)) {
      bytes += static_cast<std::int64_t>(e.end - e.begin);
    }
  }
  return bytes;
}

Status ModelStageParams::declare(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(checkpoint));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(backend));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(threads));
  return spec.declare(model_type);
}

Status ModelStageParams::check(NodeSpec& spec, backends::Stage stage) {
  if (checkpoint->empty()) {
    return invalid_argument("param 'checkpoint' is not set (a folder with config.json and model.safetensors; "
                            "make one with `edgevla model init --config small --out DIR`)");
  }
  // A missing or damaged file is reported by activate(), with the fix.
  const auto weights = std::filesystem::path(*checkpoint) / "model.safetensors";
  if (auto file = model::SafetensorsFile::open(weights.string())) {
    spec.declare_load(stage_weight_bytes(*file, stage));
    // The other variant is refused now, so `edgevla launch --check` catches it (activate()
    // checks the whole weight set again).
    auto found = model::variant_of(*file);
    if (*model_type != "auto" && found && model::model_type_name(*found) != *model_type) {
      const bool pi0 = *found == model::ModelType::kPi0;
      return invalid_argument("param model_type is " + *model_type + " but " + weights.string() + " holds a " +
                              (pi0 ? "pi0" : "pi0.5") + " checkpoint (" +
                              (pi0 ? "state_proj.weight" : "time_mlp_in.weight") +
                              "); point 'checkpoint' at a " + (*model_type == "pi0" ? "pi0" : "pi0.5") +
                              " folder or set model_type: auto");
    }
  }
  return Status::ok();
}

Status ModelStage::open(const ModelStageParams& p, backends::Stage stage, int max_steps) {
  model::OpenOptions o;
  if (*p.model_type != "auto") {
    EDGEVLA_ASSIGN_OR_RETURN(o.expect_type, model::parse_model_type(*p.model_type));
  }
  EDGEVLA_ASSIGN_OR_RETURN(checkpoint, model::Checkpoint::open(*p.checkpoint, o));
  EDGEVLA_ASSIGN_OR_RETURN(auto backend, backends::make_backend(*p.backend));
  backends::EngineOptions eo;
  eo.threads = *p.threads;
  threads = *p.threads > 0 ? *p.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  eo.max_steps = max_steps;
  EDGEVLA_ASSIGN_OR_RETURN(engine, backend->create(stage, *checkpoint, eo));
  return Status::ok();
}

bool ModelStage::memory_report_due() {
  const std::int64_t now = steady_now_ns();
  if (now - last_memory_report_ns_ < 1'000'000'000) return false;
  last_memory_report_ns_ = now;
  return true;
}

void ModelStage::stamp_replay_params(Message& m) const {
  m.set_field(std::string(bag::kReplayParamPrefix) + "threads", static_cast<std::int64_t>(threads));
}

void ModelStage::close() {
  engine.reset();
  checkpoint.reset();
}

}  // namespace edgevla::nodes
