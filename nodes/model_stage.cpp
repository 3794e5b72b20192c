#include "nodes/model_stage.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include <spdlog/spdlog.h>

#include "runtime/bag/replay.hpp"
#include "runtime/util/log.hpp"

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

namespace {

std::atomic<bool> g_device_preflight{false};

// The engine options of backend `name` from the node's params.
Expected<backends::EngineOptions> engine_options(const ModelStageParams& p, const std::string& name, int max_steps) {
  backends::EngineOptions o;
  o.threads = *p.threads;
  o.max_steps = max_steps;
  EDGEVLA_ASSIGN_OR_RETURN(o.precision, backends::parse_precision(*p.precision));
  o.device = name == "cpu" ? "cpu" : name + ":" + std::to_string(*p.cuda_device);
  // The budget is device memory: the cpu engines get none.
  o.memory_budget_bytes = name == "cpu" ? 0 : static_cast<std::int64_t>(*p.gpu_memory_budget_mb * 1024.0 * 1024.0);
  return o;
}

// `launch --check`: the first backend of the chain whose device can take the stage, or why
// none can.
Status preflight(const ModelStageParams& p, const model::StageSpec& stage) {
  std::string failures;
  for (const std::string& name : *p.backend) {
    auto backend = backends::make_backend(name);
    std::string note;
    Status st = backend.status();
    if (backend) {
      auto o = engine_options(p, name, backends::kDefaultMaxSteps);
      st = o ? (*backend)->check_device(stage, *o, note) : o.status();
    }
    if (st.is_ok()) {
      logger().info("{}: backend '{}' can run it: {}{}", stage.name, name, note,
                    failures.empty() ? "" : " (skipped: " + failures + ")");
      return Status::ok();
    }
    failures += (failures.empty() ? "" : "; ") + name + ": " + st.message();
  }
  std::string chain;
  for (const auto& n : *p.backend) chain += (chain.empty() ? "" : ", ") + n;
  return failed_precondition("no backend of [" + chain + "] can run stage " + stage.name + " here (" + failures +
                             "); add one that can to the node's 'backend' list (e.g. [cuda, cpu])");
}

}  // namespace

void set_device_preflight(bool on) { g_device_preflight.store(on); }

Expected<Tensor> for_engine(const backends::TensorSpec& spec, const Tensor& t, std::uint64_t& copies) {
  if (t.device().is_cpu() || t.device() == spec.device) return t;
  ++copies;
  auto host = t.to(Device::cpu());
  if (!host) return host.status().with_context("'" + spec.name + "' from " + t.device().to_string() + " to the host");
  return host;
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
    if (s.name != stage) continue;
    spec.declare_load(s.weight_bytes);
    if (g_device_preflight.load()) return preflight(*this, s);
  }
  return Status::ok();
}

Status ModelStage::open(spdlog::logger& log, const ModelStageParams& p, std::string_view stage, int max_steps) {
  EDGEVLA_ASSIGN_OR_RETURN(const model::Family* fam, model::find_family(*p.family, *p.checkpoint));
  EDGEVLA_ASSIGN_OR_RETURN(model, fam->open(*p.checkpoint, {*p.model_type}));
  threads = *p.threads > 0 ? *p.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // The first backend of the chain whose engine activates wins; the others' causes are kept.
  std::string failures;
  for (const std::string& name : *p.backend) {
    EDGEVLA_ASSIGN_OR_RETURN(const backends::EngineOptions o, engine_options(p, name, max_steps));
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
