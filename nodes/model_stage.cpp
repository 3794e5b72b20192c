#include "nodes/model_stage.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/bag/replay.hpp"

namespace edgevla::nodes {

Status ModelStageParams::declare(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(checkpoint));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(family));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(backend));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(threads));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(cuda_device));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(precision));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(gpu_memory_budget_mb));
  return spec.declare(model_type);
}

Status ModelStageParams::check(NodeSpec& spec, std::string_view stage) {
  if (checkpoint->empty()) {
    return invalid_argument("param 'checkpoint' is not set (a folder with config.json and model.safetensors; "
                            "make one with `edgevla model init --config small --out DIR`)");
  }
  if (backend->empty()) return invalid_argument("param 'backend' is an empty list; name at least one (cpu, cuda)");
  // A missing or damaged checkpoint is reported by activate(), with the fix; the other variant
  // is refused now, so `edgevla launch --check` catches it.
  auto fam = model::find_family(*family, *checkpoint);
  if (!fam) return *family == "auto" ? Status::ok() : fam.status();
  EDGEVLA_ASSIGN_OR_RETURN(auto stages, (*fam)->peek(*checkpoint, {*model_type}));
  for (const model::StageSpec& s : stages) {
    if (s.name == stage) spec.declare_load(s.weight_bytes);
  }
  return Status::ok();
}

Status ModelStage::open(spdlog::logger& log, const ModelStageParams& p, std::string_view stage, int max_steps) {
  EDGEVLA_ASSIGN_OR_RETURN(const model::Family* fam, model::find_family(*p.family, *p.checkpoint));
  EDGEVLA_ASSIGN_OR_RETURN(model, fam->open(*p.checkpoint, {*p.model_type}));
  backends::EngineOptions eo;
  eo.threads = *p.threads;
  threads = *p.threads > 0 ? *p.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  eo.max_steps = max_steps;
  EDGEVLA_ASSIGN_OR_RETURN(eo.precision, backends::parse_precision(*p.precision));
  eo.memory_budget_bytes = static_cast<std::int64_t>(*p.gpu_memory_budget_mb * 1024.0 * 1024.0);
  // The first backend of the chain whose engine activates wins; the others' causes are kept.
  std::string failures;
  for (const std::string& name : *p.backend) {
    backends::EngineOptions o = eo;
    o.device = name == "cpu" ? "cpu" : name + ":" + std::to_string(*p.cuda_device);
    if (name == "cpu") o.memory_budget_bytes = 0;  // the budget is device memory
    auto backend = backends::make_backend(name);
    Expected<std::unique_ptr<backends::Engine>> made =
        backend ? (*backend)->create(*model, stage, o) : Expected<std::unique_ptr<backends::Engine>>(backend.status());
    if (made) {
      engine = std::move(*made);
      if (!failures.empty()) log.warn("{}: {} runs on backend '{}' ({}); skipped: {}", stage, model->variant(), name,
                                      engine->describe(), failures);
      else log.info("{}: {} runs on backend '{}' ({})", stage, model->variant(), name, engine->describe());
      return Status::ok();
    }
    failures += (failures.empty() ? "" : "; ") + name + ": " + made.status().message();
  }
  std::string chain;
  for (const auto& n : *p.backend) chain += (chain.empty() ? "" : ", ") + n;
  return failed_precondition("no backend of [" + chain + "] could run stage " + std::string(stage) + " (" + failures +
                             "); add a backend that can to the node's 'backend' list (e.g. [cuda, cpu])");
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
  model.reset();
}

}  // namespace edgevla::nodes
