// `edgevla model init|info|forward`: make, inspect and run checkpoints without a graph.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/backends/backend.hpp"
#include "runtime/cli/cli_model.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/groot/checkpoint.hpp"
#include "runtime/model/groot/generator.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::cli {
namespace {

int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 2;
}

Expected<model::ModelConfig> config_from(const std::string& name, const std::string& type_name) {
  EDGEVLA_ASSIGN_OR_RETURN(model::ModelType type, model::parse_model_type(type_name));
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return model::load_config(name);
  return model::preset_config(name, type);
}

}  // namespace

void ModelCommands::add(CLI::App& app) {
  auto* model = app.add_subcommand("model", "make, inspect and run checkpoints (init, info: pi0 / pi0.5 and GR00T N1.6; forward: pi0 / pi0.5)");
  model->require_subcommand(1);

  init_ = model->add_subcommand("init", "write a seeded checkpoint folder (weights, config, norm stats, tokenizer)");
  init_->add_option("--family", family_, "pi0 (pi0 / pi0.5) or groot (GR00T N1.6)")->capture_default_str();
  init_->add_option("--config", config_,
                    "preset (pi0: tiny, small, pi0, pi05 or a config.json; groot: tiny, small, full)")
      ->required();
  init_->add_option("--model", type_, "pi0 or pi05 for the pi0 size presets")->capture_default_str();
  init_->add_option("--seed", seed_, "generator seed")->capture_default_str();
  init_->add_option("--out", out_, "output folder");
  init_->add_option("--dtype", dtype_, "f32, bf16 or f16 (groot default: bf16)");
  init_->add_flag("--dry-run", dry_run_, "groot: print what the checkpoint would hold, write nothing");

  info_ = model->add_subcommand("info", "check a checkpoint folder and print its model");
  info_->add_option("checkpoint", checkpoint_)->required();

  forward_ = model->add_subcommand(
      "forward", "run backbone + action head on pre-processed inputs (docs/checkpoint.md §5) and write the outputs");
  forward_->add_option("--checkpoint", checkpoint_)->required();
  forward_->add_option("--inputs", inputs_, "I/O file with the inputs (default: seeded random inputs)");
  forward_->add_option("--seed", seed_, "seed of the random inputs")->capture_default_str();
  forward_->add_option("--masked", masked_, "camera slots left out of the random inputs (indices)");
  forward_->add_option("--prompt-tokens", prompt_tokens_, "real tokens in the random prompt")->capture_default_str();
  forward_->add_option("--steps", steps_, "Euler steps (default: the checkpoint's)");
  forward_->add_option("--out", out_, "I/O file to write (inputs + outputs)")->required();
  forward_->add_option("--backend", backend_, "backend")->capture_default_str();
  forward_->add_option("--threads", threads_, "threads (0: all cores)")->capture_default_str();
  forward_->add_option("--precision", precision_, "auto (cpu f32, cuda bf16), f32 or bf16")->capture_default_str();
  forward_->add_option("--cuda-device", cuda_device_, "GPU index for --backend cuda")->capture_default_str();
  forward_->add_option("--repeat", repeat_, "runs to time (the last one is written)")->capture_default_str();
}

int ModelCommands::run() {
  if (init_->parsed()) return init();
  if (info_->parsed()) return info();
  if (forward_->parsed()) return forward();
  return -1;
}

int ModelCommands::init() {
  if (family_ == model::groot::kFamily) return init_groot();
  if (family_ != model::pi0::kFamily) {
    return fail(invalid_argument("--family " + family_ + " is unknown (pi0 or groot)"));
  }
  if (dry_run_) return fail(invalid_argument("--dry-run is for --family groot"));
  if (out_.empty()) return fail(invalid_argument("--out is required"));
  if (dtype_.empty()) dtype_ = "f32";
  auto config = config_from(config_, type_);
  if (!config) return fail(config.status());
  auto dtype = parse_dtype(dtype_);
  if (!dtype) return fail(dtype.status());
  model::GenerateOptions o;
  o.config = *config;
  o.seed = seed_;
  o.dtype = *dtype;
  const auto t0 = std::chrono::steady_clock::now();
  Status written;
  {  // the progress bar's line ends before anything else is printed
    Progress progress({.what = "model init " + out_});
    o.progress = &progress;
    written = model::generate_checkpoint(o, out_);
    if (written.is_ok()) progress.finish();
  }
  if (!written.is_ok()) return fail(written);
  auto ck = model::Checkpoint::open(out_);
  if (!ck) return fail(ck.status());
  std::printf("%s: %s checkpoint, %.1f MB of weights, written in %.1f s\n", out_.c_str(),
              std::string(model::model_type_name(ck->config().type)).c_str(),
              static_cast<double>(ck->weight_bytes()) / 1e6,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

// GR00T N1.6: the published layout (runtime/model/groot/generator.hpp); --dry-run counts only.
int ModelCommands::init_groot() {
  auto dtype = parse_dtype(dtype_.empty() ? "bf16" : dtype_);
  if (!dtype) return fail(dtype.status());
  model::groot::GenerateOptions o;
  o.preset = config_;
  o.seed = seed_;
  o.dtype = *dtype;
  auto plan = model::groot::plan_checkpoint(o);
  if (!plan) return fail(plan.status());
  if (dry_run_) {
    nlohmann::ordered_json j = {{"config", config_},
                                {"dtype", std::string(dtype_name(*dtype))},
                                {"tensors", plan->tensors},
                                {"params", plan->params},
                                {"total_size", plan->total_bytes},
                                {"keys", plan->keys_per_part},
                                {"shards", nlohmann::ordered_json::array()}};
    for (const auto& s : plan->shards) {
      j["shards"].push_back({{"file", s.file}, {"tensors", s.tensors.size()}, {"bytes", s.bytes}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (out_.empty()) return fail(invalid_argument("--out is required (or --dry-run)"));
  const auto t0 = std::chrono::steady_clock::now();
  Status written;
  {  // the progress bar's line ends before anything else is printed
    Progress progress({.what = "model init " + out_, .total = plan->total_bytes});
    o.progress = &progress;
    written = model::groot::generate_checkpoint(o, out_);
    if (written.is_ok()) progress.finish();
  }
  if (!written.is_ok()) return fail(written);
  auto ck = model::groot::Checkpoint::open(out_);
  if (!ck) return fail(ck.status());
  std::printf("%s: GR00T N1.6 %s checkpoint, %lld tensors in %zu shard(s), %.1f MB of weights, written in %.1f s\n",
              out_.c_str(), config_.c_str(), static_cast<long long>(plan->tensors), plan->shards.size(),
              static_cast<double>(ck->weight_bytes()) / 1e6,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

int ModelCommands::info() {
  if (auto family = model::find_family("auto", checkpoint_); family && (*family)->name() == model::groot::kFamily) {
    return info_groot();
  }
  auto ck = model::Checkpoint::open(checkpoint_);
  if (!ck) return fail(ck.status());
  const model::ModelConfig& c = ck->config();
  std::printf("checkpoint   %s\n", checkpoint_.c_str());
  std::printf("model        %s\n", std::string(model::model_type_name(c.type)).c_str());
  std::printf("vision       %dx%d / %d, width %d, depth %d, mlp %d, heads %d (%d tokens per camera)\n",
              c.vision.image_size, c.vision.image_size, c.vision.patch_size, c.vision.width, c.vision.depth,
              c.vision.mlp_dim, c.vision.num_heads, c.vision.tokens());
  auto tower = [](const char* name, const model::GemmaDims& g) {
    std::printf("%-12s %s: width %d, depth %d, mlp %d, heads %d/%d x %d\n", name, g.variant.c_str(), g.width,
                g.depth, g.mlp_dim, g.num_heads, g.num_kv_heads, g.head_dim);
  };
  tower("vlm", c.vlm);
  tower("expert", c.expert);
  std::printf("vocabulary   %lld\n", static_cast<long long>(c.vlm.vocab_size));
  std::printf("actions      horizon %d, dim %d, %d steps\n", c.action_horizon, c.action_dim, c.num_steps);
  std::printf("prompt       %d tokens, state in prompt: %s\n", c.token_len(), c.state_in_prompt() ? "yes" : "no");
  std::string cams;
  for (const auto& cam : c.cameras) cams += (cams.empty() ? "" : ", ") + cam;
  std::printf("cameras      %s\n", cams.c_str());
  std::printf("tensors      %zu in the file, %.1f MB used by the model\n", ck->file().entries().size(),
              static_cast<double>(ck->weight_bytes()) / 1e6);
  return 0;
}

int ModelCommands::forward() {
  auto ck = model::Checkpoint::open(checkpoint_);
  if (!ck) return fail(ck.status());
  const model::pi0::Pi0Model pm(std::move(*ck));
  const model::ModelConfig& c = pm.config();
  auto in = inputs_.empty() ? model::random_inputs(c, seed_, masked_, prompt_tokens_)
                            : model::read_io_inputs(inputs_, c);
  if (!in) return fail(in.status());
  if (steps_ > 0) in->num_steps = steps_;
  auto backend = backends::make_backend(backend_);
  if (!backend) return fail(backend.status());
  backends::EngineOptions eo;
  eo.threads = threads_;
  eo.device = backend_ == "cpu" ? "cpu" : backend_ + ":" + std::to_string(cuda_device_);
  auto precision = backends::parse_precision(precision_);
  if (!precision) return fail(precision.status().with_context("--precision"));
  eo.precision = *precision;
  eo.max_steps = std::max(backends::kDefaultMaxSteps, in->num_steps);
  auto bb = (*backend)->create(pm, model::kBackbone, eo);
  if (!bb) return fail(bb.status());
  auto head = (*backend)->create(pm, model::kActionHead, eo);
  if (!head) return fail(head.status());
  Expected<model::ForwardOutputs> out = internal_error("not run");
  for (int i = 0; i < std::max(1, repeat_); ++i) {
    out = model::run_forward(**bb, **head, c, *in, /*diagnostics=*/i == std::max(1, repeat_) - 1);
    if (!out) return fail(out.status());
    std::printf("run %d: backbone %.2f ms, action head %.2f ms", i, out->backbone_ms, out->action_head_ms);
    for (const auto& [name, ms] : out->parts) std::printf(", %s %.2f", name.c_str(), ms);
    std::printf("\n");
  }
  if (Status s = model::write_io_file(out_, c, *in, &*out); !s.is_ok()) return fail(s);
  return 0;
}

}  // namespace edgevla::cli
