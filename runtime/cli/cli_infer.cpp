// `edgevla infer`: image files, a prompt and a state through the preprocess node's pipeline, the
// backbone and the action head, once, with the action head's noise (docs/infer.md).
#include "runtime/cli/cli_infer.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "nodes/camera/image_files.hpp"
#include "runtime/backends/backend.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/image_ops.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/pi0/tokenizer.hpp"
#include "runtime/util/rng.hpp"

namespace edgevla::cli {
namespace {

namespace fs = std::filesystem;

// The action head's largest num_steps (its param range).
constexpr int kMaxSteps = 1000;
constexpr std::string_view kSlotSuffix = "_0_rgb";
constexpr const char* kInitHint =
    "`edgevla model init --config tiny --model pi05 --out DIR` writes a complete test checkpoint";

// Bad input: the user can fix it.
int input_error(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 2;
}

// A failure of edgevla or of the machine.
int internal_failure(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

std::string short_slot(const std::string& slot) {
  return slot.ends_with(kSlotSuffix) ? slot.substr(0, slot.size() - kSlotSuffix.size()) : slot;
}

std::string slot_list(const model::ModelConfig& c) {
  std::string s;
  for (const auto& slot : c.cameras) {
    s += (s.empty() ? "" : ", ") + short_slot(slot) + " (" + slot + ")";
  }
  return s;
}

// SLOT=PATH -> the slot's index in config.cameras and the path.
Expected<std::pair<std::size_t, std::string>> parse_image_arg(const std::string& arg,
                                                              const model::ModelConfig& c) {
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
    return invalid_argument(
        "--image '" + arg +
        "' is not SLOT=PATH (e.g. --image base=frame.png); slots: " + slot_list(c));
  }
  const std::string slot = arg.substr(0, eq);
  for (std::size_t i = 0; i < c.cameras.size(); ++i) {
    if (c.cameras[i] == slot || short_slot(c.cameras[i]) == slot) {
      return std::pair{i, arg.substr(eq + 1)};
    }
  }
  return invalid_argument("--image " + arg + ": '" + slot +
                          "' is not a camera slot of this model; its slots are " + slot_list(c));
}

// "0.1, -2,3e-1" -> finite doubles.
Expected<std::vector<double>> parse_state(const std::string& text) {
  std::vector<double> values;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    const std::string which = "--state '" + text + "': value " + std::to_string(values.size() + 1);
    if (item.empty()) {
      return invalid_argument(which +
                              " is empty; give comma-separated numbers, e.g. --state=0.1,-0.2,0.3");
    }
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size()) {
      return invalid_argument(which + " ('" + item + "') is not a number");
    }
    if (!std::isfinite(v)) {
      return invalid_argument(which + " is '" + item + "'; a state must be finite (no NaN or Inf)");
    }
    values.push_back(v);
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

// A PNG/JPEG file -> f32 [3,S,S] in [-1,1], resized with padding as the preprocess node does.
Expected<Tensor> load_image(const std::string& path, int size) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    return invalid_argument(path + " is not a file");
  }
  EDGEVLA_ASSIGN_OR_RETURN(nodes::RgbImage rgb, nodes::decode_image_file(path));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor hwc,
                           Tensor::from_values(std::span<const std::uint8_t>(rgb.pixels),
                                               Shape{rgb.height, rgb.width, 3}));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor canvas, model::resize_with_pad(hwc, size, "rgb8"));
  return model::to_model_input(canvas);
}

// JSON writing: floats in their shortest round-trip form (a float32 reader gets the exact value
// back), one action per line.
std::string number(double v) {
  char buf[32];
  return {buf, std::to_chars(buf, buf + sizeof buf, v).ptr};
}
std::string number(float v) {
  char buf[32];
  return {buf, std::to_chars(buf, buf + sizeof buf, v).ptr};
}
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
template <typename T>
std::string row(std::span<const T> values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + number(values[i]);
  return s + "]";
}
std::string rows(std::span<const float> values, std::size_t width) {
  std::string s = "[";
  for (std::size_t r = 0; r * width < values.size(); ++r) {
    s += std::string(r ? "," : "") + "\n    " + row(values.subspan(r * width, width));
  }
  return s + "\n  ]";
}
// {"key": value, ...} with one key per line; values are JSON text already.
std::string json_object(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string s = "{";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    s +=
        std::string(i ? "," : "") + "\n  " + json_string(fields[i].first) + ": " + fields[i].second;
  }
  return s + "\n}\n";
}

}  // namespace

void InferCommand::add(CLI::App& app) {
  // Required options are checked in infer(), so that leaving one out is exit code 2 like every
  // other bad input.
  infer_ = app.add_subcommand("infer",
                              "run the whole policy once on image files, a prompt and a state "
                              "(no graph) and write the action chunk as JSON");
  infer_->add_option("--checkpoint", checkpoint_, "checkpoint folder (required)");
  infer_->add_option("--image", images_,
                     "SLOT=PATH, PNG or JPEG of any size (repeatable; at least one; SLOT: base, "
                     "left_wrist, right_wrist or the full slot name; slots not given are masked)");
  infer_->add_option("--prompt", prompt_, "the instruction (required)");
  infer_->add_option("--state", state_,
                     "robot state, comma-separated, e.g. --state=0.1,-0.2,0.3 (required)");
  infer_
      ->add_option("--seed", seed_, "noise seed (an action_head with param seed N draws the same)")
      ->capture_default_str();
  infer_->add_option("--steps", steps_, "Euler steps (0: the checkpoint's)")->capture_default_str();
  infer_->add_flag("--truncate", truncate_,
                   "cut a prompt over the model's token budget instead of failing");
  infer_->add_option("--out", out_, "JSON file to write (default: print it to stdout)");
  infer_->add_option("--backend", backend_, "backend")->capture_default_str();
  infer_->add_option("--threads", threads_, "threads (0: all cores)")->capture_default_str();
  infer_->add_option("--precision", precision_, "auto (cpu f32, cuda bf16), f32 or bf16")->capture_default_str();
  infer_->add_option("--cuda-device", cuda_device_, "GPU index for --backend cuda")->capture_default_str();
}

int InferCommand::run() {
  if (infer_ == nullptr || !infer_->parsed()) return -1;
  // Nothing below should throw; a library that does anyway must not turn bad input into an abort.
  try {
    return infer();
  } catch (const std::exception& e) {
    return internal_failure(internal_error(std::string("unexpected exception: ") + e.what()));
  }
}

int InferCommand::infer() {
  // Everything that needs no checkpoint first.
  if (checkpoint_.empty()) {
    return input_error(invalid_argument(std::string("--checkpoint DIR is required; ") + kInitHint));
  }
  if (images_.empty()) {
    return input_error(invalid_argument(
        "at least one --image SLOT=PATH is required, e.g. --image base=frame.png"));
  }
  if (model::Tokenizer::clean_prompt(prompt_).empty()) {
    return input_error(invalid_argument("--prompt \"...\" is required (the instruction)"));
  }
  if (state_.empty()) {
    return input_error(invalid_argument("--state is required, e.g. --state=0.1,-0.2,0.3"));
  }
  if (steps_ < 0 || steps_ > kMaxSteps) {
    return input_error(out_of_range("--steps " + std::to_string(steps_) + " is out of range: 1.." +
                                    std::to_string(kMaxSteps) +
                                    ", or 0 for the checkpoint's default"));
  }
  if (threads_ < 0) return input_error(out_of_range("--threads must be 0 (all cores) or more"));
  auto raw_state = parse_state(state_);
  if (!raw_state) return input_error(raw_state.status());

  // The checkpoint: weights, norm stats, tokenizer.
  std::error_code ec;
  if (!fs::is_directory(checkpoint_, ec)) {
    return input_error(
        not_found("--checkpoint '" + checkpoint_ + "' is not a folder; " + kInitHint));
  }
  auto ck = model::Checkpoint::open(checkpoint_);
  if (!ck) return input_error(ck.status().with_context("--checkpoint " + checkpoint_));
  const model::pi0::Pi0Model pm(std::move(*ck));
  const model::ModelConfig& c = pm.config();
  const std::string type_name(model::model_type_name(c.type));
  const model::NormKind kind = model::norm_kind_for(c.type);

  // The checkpoint's assets, found and checked as the nodes find them.
  auto stats = model::pi0::load_norm_stats_for(checkpoint_, c, "", "state and actions");
  if (!stats) return input_error(stats.status());
  const std::size_t A = static_cast<std::size_t>(c.action_dim);
  const std::size_t H = static_cast<std::size_t>(c.action_horizon);
  const std::size_t robot_dim = stats->actions.size();
  auto tok = model::pi0::load_tokenizer_for(checkpoint_, c, "");
  if (!tok) return input_error(tok.status());

  // Inputs, exactly as the preprocess node builds an Observation.
  model::ForwardInputs in;
  in.images.resize(c.cameras.size());
  std::vector<std::string> image_paths(c.cameras.size());
  for (const std::string& arg : images_) {
    auto slot = parse_image_arg(arg, c);
    if (!slot) return input_error(slot.status());
    const auto [index, path] = *slot;
    if (in.images[index].defined()) {
      return input_error(invalid_argument("--image: slot " + c.cameras[index] + " is given twice"));
    }
    auto image = load_image(path, c.vision.image_size);
    if (!image) return input_error(image.status().with_context("--image " + arg));
    in.images[index] = std::move(*image);
    image_paths[index] = path;
  }

  const std::vector<double>& raw = *raw_state;
  if (raw.size() > A || raw.size() > stats->state.size()) {
    return input_error(invalid_argument(
        "--state has " + std::to_string(raw.size()) + " values, but the model takes at most " +
        std::to_string(std::min(A, stats->state.size())) + " (action_dim " + std::to_string(A) +
        ", " + std::to_string(stats->state.size()) + " state dims in the checkpoint's norm stats)"));
  }
  std::vector<double> normalized(raw.size());
  if (Status s = model::normalize(raw, stats->state, kind, normalized); !s.is_ok()) {
    return input_error(s);
  }

  auto tokens = c.state_in_prompt()
                    ? tok->encode(prompt_, std::span<const double>(normalized), c.token_len())
                    : tok->encode(prompt_, std::nullopt, c.token_len());
  if (!tokens) return input_error(tokens.status().with_context("--prompt"));
  if (tokens->truncated) {
    if (!truncate_) {
      return input_error(
          invalid_argument("--prompt needs " + std::to_string(tokens->full_length) + " tokens" +
                           (c.state_in_prompt() ? " (with the state)" : "") +
                           " but the model's budget (max_token_len) is " +
                           std::to_string(c.token_len()) + "; shorten it or pass --truncate"));
    }
    std::fprintf(stderr, "warning: --prompt cut from %d to %d tokens (--truncate)\n",
                 tokens->full_length, c.token_len());
  }

  const auto T = static_cast<std::int64_t>(tokens->tokens.size());
  auto tokens_t = Tensor::from_values(std::span<const std::int32_t>(tokens->tokens), Shape{T});
  auto mask_t = Tensor::empty(DType::kBool, Shape{T});
  auto state_t = Tensor::empty(DType::kF32, Shape{c.action_dim});
  auto noise_t = Tensor::empty(DType::kF32, Shape{c.action_horizon, c.action_dim});
  for (const Status& s : {tokens_t.status(), mask_t.status(), state_t.status(), noise_t.status()}) {
    if (!s.is_ok()) return internal_failure(s);
  }
  for (std::int64_t i = 0; i < T; ++i) {
    mask_t->data<bool>()[i] = tokens->mask[static_cast<std::size_t>(i)] != 0;
  }
  float* state = state_t->data<float>();
  std::fill(state, state + A, 0.0f);  // openpi pads after normalizing
  for (std::size_t i = 0; i < normalized.size(); ++i) state[i] = static_cast<float>(normalized[i]);
  // The action head's draw: an action_head with param seed N makes this noise for its first chunk.
  Rng rng(seed_, 0);
  rng.fill_normal({noise_t->data<float>(), H * A});
  in.tokens = std::move(*tokens_t);
  in.token_mask = std::move(*mask_t);
  in.state = std::move(*state_t);
  in.noise = std::move(*noise_t);
  in.num_steps = steps_ > 0 ? steps_ : c.num_steps;

  // The model.
  auto backend = backends::make_backend(backend_);
  if (!backend) return input_error(backend.status().with_context("--backend"));
  backends::EngineOptions eo;
  eo.threads = threads_;
  eo.device = backend_ == "cpu" ? "cpu" : backend_ + ":" + std::to_string(cuda_device_);
  auto precision = backends::parse_precision(precision_);
  if (!precision) return input_error(precision.status().with_context("--precision"));
  eo.precision = *precision;
  eo.max_steps = std::max(backends::kDefaultMaxSteps, in.num_steps);
  // An option the backend cannot honour (device, precision) is the caller's to fix.
  auto engine_error = [&](const Status& s, std::string_view stage) {
    return s.code() == StatusCode::kInvalidArgument ? input_error(s.with_context(stage))
                                                     : internal_failure(s.with_context(stage));
  };
  auto bb = (*backend)->create(pm, model::kBackbone, eo);
  if (!bb) return engine_error(bb.status(), "backbone");
  auto head = (*backend)->create(pm, model::kActionHead, eo);
  if (!head) return engine_error(head.status(), "action head");
  const auto t0 = std::chrono::steady_clock::now();
  auto out = model::run_forward(**bb, **head, c, in, /*diagnostics=*/false);
  const double total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!out) return internal_failure(out.status());

  // Un-normalize each row and keep the robot's dims, as the action head does.
  const float* normalized_actions = out->actions.data<float>();
  std::vector<float> actions(H * robot_dim);
  if (Status s = model::unnormalize_chunk({normalized_actions, H * A}, static_cast<std::int64_t>(A), stats->actions,
                                          kind, static_cast<std::int64_t>(robot_dim), actions);
      !s.is_ok()) {
    return internal_failure(s);
  }

  std::string images_json;
  for (std::size_t i = 0; i < c.cameras.size(); ++i) {
    if (in.images[i].defined()) {
      images_json += (images_json.empty() ? "" : ", ") + json_string(c.cameras[i]) + ": " +
                     json_string(image_paths[i]);
    }
  }
  char timing[128];
  std::snprintf(timing, sizeof timing,
                "{\"backbone\": %.3f, \"action_head\": %.3f, \"total\": %.3f}", out->backbone_ms,
                out->action_head_ms, total_ms);
  const std::string json = json_object({
      {"model", json_string(type_name)},
      {"checkpoint", json_string(checkpoint_)},
      {"prompt", json_string(prompt_)},
      {"seed", std::to_string(seed_)},
      {"num_steps", std::to_string(in.num_steps)},
      {"tokens", std::to_string(tokens->length)},
      {"images", "{" + images_json + "}"},
      {"state", row(std::span<const double>(raw))},
      {"actions", rows(actions, robot_dim)},
      {"actions_normalized", rows({normalized_actions, H * A}, A)},
      {"timing_ms", timing},
  });

  if (out_.empty()) {
    std::fwrite(json.data(), 1, json.size(), stdout);
    return std::fflush(stdout) == 0 ? 0
                                    : internal_failure(internal_error("cannot write to stdout"));
  }
  std::ofstream f(out_, std::ios::binary | std::ios::trunc);
  f.write(json.data(), static_cast<std::streamsize>(json.size()));
  f.close();
  if (!f) {
    return input_error(
        unavailable("--out '" + out_ + "' cannot be written; is its folder there and writable?"));
  }
  std::printf("%s: %zu x %zu actions (%s, %d steps, seed %llu) in %.1f ms\n", out_.c_str(), H,
              robot_dim, type_name.c_str(), in.num_steps, static_cast<unsigned long long>(seed_),
              total_ms);
  return 0;
}

}  // namespace edgevla::cli
