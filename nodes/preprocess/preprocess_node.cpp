#include "nodes/preprocess/preprocess_node.hpp"

#include "runtime/model/pi0/pi0_family.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "runtime/model/pi0/checkpoint.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {
namespace {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

std::string seconds(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) * 1e-9);
  return buf;
}

// pi0 vs pi0.5 when config.json does not say: by the weight set (model.md §1), from the
// safetensors header only (the weights are not read).
Expected<model::ModelType> type_from_weights(const std::string& dir) {
  const std::string path = (fs::path(dir) / "model.safetensors").string();
  auto file = model::SafetensorsFile::open(path);
  if (!file) {
    return failed_precondition(
        "config.json gives no model_type and the weights cannot tell pi0 from pi0.5 (" +
        file.status().message() + "); add \"model_type\": \"pi0\" or \"pi05\" to config.json");
  }
  auto type = model::variant_of(*file);
  if (!type) return type.status().with_context("add \"model_type\" to config.json, or fix the weights");
  return *type;
}

}  // namespace

PreprocessNode::PreprocessNode(const NodeOptions& options) : Node(options) {}
PreprocessNode::~PreprocessNode() = default;

Status PreprocessNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(checkpoint_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(tokenizer_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(norm_stats_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(model_type_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(cameras_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(prompt_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(on_long_prompt_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(max_age_s_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(rate_hz_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(wait_for_chunk_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(chunk_timeout_s_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(state_dim_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(default_state_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(embodiment_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(pad_to_));

  // The model's sizes decide the subscriptions, so config.json (small) is read here; the
  // tokenizer, norm stats and weights header wait for activate().
  if (checkpoint_->empty()) {
    return invalid_argument(where() + ": param 'checkpoint' is required (a folder holding "
                            "config.json, assets/<asset_id>/norm_stats.json and tokenizer.model)");
  }
  std::vector<std::string> slots;
  family_pre_.reset();
  auto family = model::find_family("auto", *checkpoint_);
  if (family && (*family)->has_preprocessor()) {
    EDGEVLA_RETURN_IF_ERROR(configure_family(**family, slots));
  } else {
    auto config = model::load_config((fs::path(*checkpoint_) / "config.json").string());
    if (!config) return config.status().with_context(where());
    config_ = std::move(*config);

    slots = cameras_->empty() ? config_.cameras : *cameras_;
    std::set<std::string> seen;
    for (const std::string& slot : slots) {
      if (std::find(config_.cameras.begin(), config_.cameras.end(), slot) == config_.cameras.end()) {
        return invalid_argument(where() + ": camera slot '" + slot + "' (param cameras) is not one "
                                "of the model's slots: " + join(config_.cameras));
      }
      if (!seen.insert(slot).second) {
        return invalid_argument(where() + ": camera slot '" + slot + "' is listed twice");
      }
    }
    const int action_dim = config_.action_dim;
    if (*state_dim_ > action_dim) {
      return invalid_argument(where() + ": state_dim " + std::to_string(*state_dim_) +
                              " exceeds the model's action_dim " + std::to_string(action_dim));
    }
    const auto dflt = static_cast<int>(default_state_->size());
    if (dflt > action_dim || (*state_dim_ > 0 && dflt > 0 && dflt != *state_dim_)) {
      return invalid_argument(where() + ": default_state has " + std::to_string(dflt) +
                              " values; it needs state_dim (" + std::to_string(*state_dim_) +
                              ") values, at most action_dim (" + std::to_string(action_dim) + ")");
    }
    for (double v : *default_state_) {
      if (!std::isfinite(v)) return invalid_argument(where() + ": default_state holds " + std::to_string(v));
    }
    if (!embodiment_->empty() || *pad_to_ != 0) {
      return invalid_argument(where() + ": params embodiment and pad_to are for GR00T checkpoints; " + *checkpoint_ +
                              " is a pi0 / pi0.5 checkpoint (one robot, fixed token budget): remove them");
    }
  }
  EDGEVLA_ASSIGN_OR_RETURN(observation_, spec.publisher<msgs::Observation>("observation"));
  cameras_in_.clear();
  cameras_in_.reserve(slots.size());
  for (const std::string& slot : slots) cameras_in_.push_back({slot, "image/" + slot, {}, {}, {}, {}, {}, 0, 0});
  for (std::size_t i = 0; i < cameras_in_.size(); ++i) {
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::Image>(
        cameras_in_[i].topic_name, QoS::keep_latest(),
        [this, i](const msgs::Image& m) { on_image(i, m); }));
  }
  EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::RobotState>(
      "state", QoS::keep_latest(), [this](const msgs::RobotState& m) { on_state(m); }));
  EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::Prompt>(
      "prompt", QoS::keep_latest(), [this](const msgs::Prompt& m) { on_prompt(m); }));
  if (*wait_for_chunk_) {
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::ActionChunk>(
        "actions", QoS::keep_latest(), [this](const msgs::ActionChunk& m) { on_chunk(m); }));
  }
  if (*rate_hz_ > 0) {
    const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / *rate_hz_));
    EDGEVLA_RETURN_IF_ERROR(spec.timer("publish", period, [this] { on_tick(); }));
  }
  return Status::ok();
}

Status PreprocessNode::activate() {
  const std::string& dir = *checkpoint_;
  if (family_pre_) {
    for (Camera& c : cameras_in_) {
      c.header.reset();
      c.frame.reset();
      c.rgb.clear();
    }
    state_.reset();
    if (!default_state_->empty()) {
      auto st = make_state(*default_state_, 0);
      if (!st) return st.status().with_context(where() + ": default_state");
      st->from_param = true;
      state_ = std::move(*st);
    }
    prompt_message_.reset();
    seen_prompt_param_ = *prompt_;
    inputs_changed_ = false;
    in_flight_ = false;
    waiting_logged_.clear();
    log().info("{}: {} camera(s) ({}), state of {} value(s) in {} group(s), prompt padded to {}", where(),
               cameras_in_.size(), join(family_pre_->cameras()), state_total_, family_pre_->state_groups().size(),
               *pad_to_ > 0 ? std::to_string(*pad_to_) + " tokens" : std::string("its own length"));
    return Status::ok();
  }
  if (*model_type_ != "auto") {
    type_ = *model::parse_model_type(*model_type_);  // one of the declared choices
    if (config_.model_type_given && config_.type != type_) {
      return invalid_argument(where() + ": param model_type is " + *model_type_ + " but " + dir +
                              "/config.json says " + std::string(model::model_type_name(config_.type)));
    }
    config_.type = type_;
  } else if (config_.model_type_given) {
    type_ = config_.type;
  } else {
    auto t = type_from_weights(dir);
    if (!t) return t.status().with_context(where());
    type_ = *t;
    config_.type = type_;  // token_len() and state_in_prompt() follow the type
  }
  norm_kind_ = model::norm_kind_for(type_);

  // The checkpoint's assets (the one loader every consumer uses).
  auto stats = model::pi0::load_norm_stats_for(dir, config_, *norm_stats_, "state");
  if (!stats) return stats.status().with_context(where());
  stats_ = std::move(*stats);
  if (*state_dim_ > static_cast<int>(stats_.state.size())) {
    return invalid_argument(where() + ": state_dim " + std::to_string(*state_dim_) + " exceeds the " +
                            std::to_string(stats_.state.size()) + " state dims of the norm stats");
  }
  auto tok = model::pi0::load_tokenizer_for(dir, config_, *tokenizer_);
  if (!tok) return tok.status().with_context(where());
  tok_ = std::move(*tok);

  const int size = config_.vision.image_size;
  for (Camera& c : cameras_in_) {
    EDGEVLA_ASSIGN_OR_RETURN(c.canvas, Tensor::empty(DType::kU8, Shape{size, size, 3}));
    c.header.reset();
    c.frame.reset();
  }
  state_.reset();
  if (!default_state_->empty()) {
    auto s = make_state(*default_state_, 0);
    if (!s) return s.status().with_context(where() + ": default_state");
    s->from_param = true;
    state_ = std::move(*s);
  }
  prompt_message_.reset();
  seen_prompt_param_ = *prompt_;
  cached_tokens_.reset();
  inputs_changed_ = false;
  in_flight_ = false;
  waiting_logged_.clear();
  truncation_logged_.clear();

  // A default prompt over the budget is a configuration error, caught now for pi0's format
  // (pi0.5's length depends on the state, so it is checked per observation).
  if (!prompt_->empty() && !config_.state_in_prompt()) {
    auto t = tok_->encode(*prompt_, std::nullopt, config_.token_len());
    if (!t) return t.status().with_context(where());
    if (t->truncated && *on_long_prompt_ == "error") {
      return invalid_argument(where() + ": param prompt needs " + std::to_string(t->full_length) +
                              " tokens but the model's budget (max_token_len) is " +
                              std::to_string(config_.token_len()) +
                              "; shorten it or set on_long_prompt: truncate");
    }
  }
  log().info("{}: {} ({} normalization), {} camera(s) at {}x{}, {} prompt tokens{}, stats {}, "
             "tokenizer {}",
             where(), model::model_type_name(type_), model::norm_kind_name(norm_kind_),
             cameras_in_.size(), size, size, config_.token_len(),
             config_.state_in_prompt() ? " with the state in the prompt" : "",
             norm_stats_->empty() ? "of the checkpoint" : *norm_stats_, tokenizer_->empty() ? "of the checkpoint" : *tokenizer_);
  return Status::ok();
}

Status PreprocessNode::deactivate() {
  tok_.reset();
  state_.reset();
  for (Camera& c : cameras_in_) {
    c.canvas = Tensor();
    c.header.reset();
  }
  return Status::ok();
}

void PreprocessNode::on_image(std::size_t index, const msgs::Image& image) {
  trigger_ns_ = steady_now_ns();
  Camera& cam = cameras_in_[index];
  auto format = model::parse_pixel_format(image.encoding());
  if (!format) {
    report_bad_input(cam.topic_name, format.status());
    return;
  }
  // A rejected frame leaves the canvas (or the RGB copy) untouched (both check before they
  // write), so the previous frame stays in use.
  const Status s = family_pre_ ? model::to_rgb8(image.pixels(), *format, cam.rgb)
                               : cam.resizer.resize_with_pad(image.pixels(), *format, cam.canvas);
  if (!s.is_ok()) {
    report_bad_input(cam.topic_name, s);
    return;
  }
  if (family_pre_) {
    cam.height = static_cast<int>(image.pixels().shape()[0]);
    cam.width = static_cast<int>(image.pixels().shape()[1]);
  }
  cam.header = image.header();
  auto frame = image.message().int_field("frame");
  cam.frame = frame ? std::optional<std::int64_t>(*frame) : std::nullopt;
  inputs_changed_ = true;
  if (*rate_hz_ <= 0 && index == 0) publish_observation();
}

Expected<PreprocessNode::State> PreprocessNode::make_state(std::span<const double> raw,
                                                           std::int64_t stamp_ns) const {
  if (family_pre_) return make_family_state(raw, stamp_ns);
  const auto d = static_cast<int>(raw.size());
  if (d == 0) return invalid_argument("the state is empty");
  if (*state_dim_ > 0 && d != *state_dim_) {
    return invalid_argument("the state has " + std::to_string(d) + " values but param state_dim is " +
                            std::to_string(*state_dim_));
  }
  if (d > config_.action_dim) {
    return invalid_argument("the state has " + std::to_string(d) + " values, more than the model's "
                            "action_dim " + std::to_string(config_.action_dim));
  }
  if (d > static_cast<int>(stats_.state.size())) {
    return invalid_argument("the state has " + std::to_string(d) + " values but the norm stats "
                            "cover " + std::to_string(stats_.state.size()));
  }
  for (int i = 0; i < d; ++i) {
    if (!std::isfinite(raw[static_cast<std::size_t>(i)])) {
      return invalid_argument("state[" + std::to_string(i) + "] is " +
                              std::to_string(raw[static_cast<std::size_t>(i)]) +
                              "; the robot sent a NaN or infinite state (kept the previous one)");
    }
  }
  State s;
  s.raw.assign(raw.begin(), raw.end());
  s.normalized.resize(raw.size());
  EDGEVLA_RETURN_IF_ERROR(model::normalize(raw, stats_.state, norm_kind_, s.normalized));
  s.stamp_ns = stamp_ns;
  return s;
}

void PreprocessNode::on_state(const msgs::RobotState& msg) {
  const Tensor& p = msg.position();
  if (!p.device().is_cpu()) {
    report_bad_input("state", failed_precondition("state is on " + p.device().to_string()));
    return;
  }
  std::vector<double> raw(static_cast<std::size_t>(p.numel()));
  auto values = p.contiguous();
  if (!values) {
    report_bad_input("state", values.status());
    return;
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    raw[i] = p.dtype() == DType::kF64 ? values->data<double>()[i]
                                      : static_cast<double>(values->data<float>()[i]);
  }
  auto s = make_state(raw, msg.header().source_stamp_ns);
  if (!s) {
    report_bad_input("state", s.status());
    return;
  }
  state_ = std::move(*s);
  inputs_changed_ = true;
}

void PreprocessNode::on_prompt(const msgs::Prompt& prompt) {
  prompt_message_ = prompt.text();
  seen_prompt_param_ = *prompt_;  // a later `param set prompt` wins again
  inputs_changed_ = true;
}

void PreprocessNode::on_tick() {
  trigger_ns_ = steady_now_ns();
  if (inputs_changed_) publish_observation();
}

void PreprocessNode::on_chunk(const msgs::ActionChunk&) {
  // A chunk came back: the next frame makes the next observation.
  in_flight_ = false;
}

const std::string& PreprocessNode::active_prompt() {
  // Whichever changed last wins: a Prompt message, or the param (edgevla param set).
  if (*prompt_ != seen_prompt_param_) {
    seen_prompt_param_ = *prompt_;
    prompt_message_.reset();
  }
  return prompt_message_ ? *prompt_message_ : *prompt_;
}

void PreprocessNode::waiting_for(const std::string& what) {
  if (waiting_logged_ == what) return;
  waiting_logged_ = what;
  log().info("{}: waiting for {} before the first observation", where(), what);
}

Expected<model::TokenizedPrompt> PreprocessNode::tokenize(const std::string& prompt,
                                                          const State& state) {
  if (config_.state_in_prompt()) {
    return tok_->encode(prompt, std::span<const double>(state.normalized), config_.token_len());
  }
  if (!cached_tokens_ || cached_prompt_ != prompt) {
    EDGEVLA_ASSIGN_OR_RETURN(cached_tokens_, tok_->encode(prompt, std::nullopt, config_.token_len()));
    cached_prompt_ = prompt;
  }
  return *cached_tokens_;
}

// pi0 / pi0.5: the node's own preprocessing. Says why (counted) and gives nothing when it fails.
std::optional<Message> PreprocessNode::pi0_observation(const std::string& prompt) {
  auto tokens = tokenize(prompt, *state_);
  if (!tokens) {
    report_bad_input("prompt", tokens.status());
    return std::nullopt;
  }
  if (tokens->truncated) {
    if (*on_long_prompt_ == "error") {
      report_bad_input("prompt", invalid_argument(
          "no observation: the prompt needs " + std::to_string(tokens->full_length) +
          " tokens but the model's budget (max_token_len) is " + std::to_string(config_.token_len()) +
          "; shorten it or set on_long_prompt: truncate ('" + prompt + "')"));
      return std::nullopt;
    }
    if (truncation_logged_ != prompt) {
      truncation_logged_ = prompt;
      log().warn("{}: prompt cut from {} to {} tokens: '{}'", where(), tokens->full_length,
                 config_.token_len(), prompt);
    }
  }

  // state f32 [action_dim]: normalized, zero-padded (openpi pads after normalizing).
  const int A = config_.action_dim;
  auto state_t = Tensor::empty(DType::kF32, Shape{A});
  auto raw_t = Tensor::empty(DType::kF32, Shape{static_cast<std::int64_t>(state_->raw.size())});
  auto tokens_t = Tensor::empty(DType::kI32, Shape{config_.token_len()});
  auto mask_t = Tensor::empty(DType::kBool, Shape{config_.token_len()});
  if (!state_t || !raw_t || !tokens_t || !mask_t) {
    report_bad_input("observation", resource_exhausted("cannot allocate the observation's tensors"));
    return std::nullopt;
  }
  float* s = state_t->data<float>();
  std::fill(s, s + A, 0.0f);
  for (std::size_t i = 0; i < state_->normalized.size(); ++i) s[i] = static_cast<float>(state_->normalized[i]);
  std::copy(state_->raw.begin(), state_->raw.end(), raw_t->data<float>());
  std::copy(tokens->tokens.begin(), tokens->tokens.end(), tokens_t->data<std::int32_t>());
  bool* m = mask_t->data<bool>();
  for (std::size_t i = 0; i < tokens->mask.size(); ++i) m[i] = tokens->mask[i] != 0;

  auto msg = msgs::Observation::make(std::move(*state_t));
  if (!msg) {
    report_bad_input("observation", msg.status());
    return std::nullopt;
  }
  // Images go into shared memory loaned from the publisher: no copy to other processes.
  const int size = config_.vision.image_size;
  for (const Camera& c : cameras_in_) {
    auto img = observation_.loan(DType::kF32, Shape{3, size, size});
    if (!img) {
      report_bad_input("loan", img.status());
      return std::nullopt;
    }
    if (Status st = model::to_model_input(c.canvas, *img); !st.is_ok()) {
      report_bad_input("observation", st);
      return std::nullopt;
    }
    msg->set_tensor("image." + c.slot, std::move(*img));
  }
  msg->set_tensor("state_raw", std::move(*raw_t));
  msg->set_tensor("tokens", std::move(*tokens_t));
  msg->set_tensor("token_mask", std::move(*mask_t));
  return std::move(*msg);
}

void PreprocessNode::publish_observation() {
  if (*wait_for_chunk_ && in_flight_) {
    const auto timeout = static_cast<std::int64_t>(*chunk_timeout_s_ * 1e9);
    if (callback_stamp_ns() - in_flight_since_ns_ < timeout) return;
    report_bad_input("actions", timeout_error(
        "no ActionChunk came back within chunk_timeout_s = " + seconds(timeout) +
        " (the observation was dropped downstream, or a stage is down); publishing the next one"));
    in_flight_ = false;
  }
  // Every listed camera, a state and a prompt are needed.
  std::vector<std::string> missing;
  for (const Camera& c : cameras_in_) {
    if (!c.header) missing.push_back(c.topic_name);
  }
  if (!state_) missing.push_back("state");
  const std::string prompt = active_prompt();
  if (prompt.empty()) missing.push_back("a prompt (param prompt or topic prompt)");
  if (!missing.empty()) {
    waiting_for(join(missing));
    return;
  }
  inputs_changed_ = false;

  // Staleness, relative to the newest input (the default_state has no age).
  if (*max_age_s_ > 0) {
    std::int64_t newest = state_->from_param ? 0 : state_->stamp_ns;
    for (const Camera& c : cameras_in_) newest = std::max(newest, c.header->source_stamp_ns);
    const auto max_age = static_cast<std::int64_t>(*max_age_s_ * 1e9);
    std::vector<std::string> stale;
    std::int64_t oldest_age = 0;
    auto check = [&](const std::string& what, std::int64_t stamp) {
      const std::int64_t age = newest - stamp;
      if (age > max_age) {
        stale.push_back(what + " (" + seconds(age) + ")");
        oldest_age = std::max(oldest_age, age);
      }
    };
    for (const Camera& c : cameras_in_) check(c.topic_name, c.header->source_stamp_ns);
    if (!state_->from_param) check("state", state_->stamp_ns);
    if (!stale.empty()) {
      report_bad_input("stale", unavailable("no observation: " + join(stale) +
                                            " older than the newest input, over max_age_s = " +
                                            seconds(max_age) + "; is a camera or the robot stalled?"));
      return;
    }
  }

  std::optional<Message> msg = family_pre_ ? family_observation(prompt) : pi0_observation(prompt);
  if (!msg) return;
  for (const Camera& c : cameras_in_) msg->set_field("source_stamp_ns." + c.slot, c.header->source_stamp_ns);
  msg->set_field("prompt", prompt);
  if (!state_->from_param) msg->set_field("source_stamp_ns.state", state_->stamp_ns);
  // The first camera's frame is the observation's capture time and hop trace (a trace is one
  // path; the other inputs' stamps are in the source_stamp_ns.* fields).
  const Camera& first = cameras_in_.front();
  msg->derive_from(*first.header);
  if (first.frame) msg->set_field("frame", *first.frame);
  msg->set_field("preprocess_ms", static_cast<double>(steady_now_ns() - trigger_ns_) * 1e-6);
  if (Status st = observation_.publish(std::move(*msg)); !st.is_ok()) {
    report_bad_input("publish", st);
    return;
  }
  if (*wait_for_chunk_) {
    in_flight_ = true;
    in_flight_since_ns_ = callback_stamp_ns();  // replay reproduces a timed-out wait
  }
  waiting_logged_.clear();
}

EDGEVLA_REGISTER_NODE(PreprocessNode, "preprocess",
                      "camera frames, robot state and instruction -> a policy's Observation (its family's "
                      "image transform, state normalization and tokenization)");

}  // namespace edgevla::nodes
