#include "nodes/preprocess/preprocess_node.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/model/image_ops.hpp"
#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {
namespace {

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
  EDGEVLA_RETURN_IF_ERROR(spec.declare(threads_));

  // The family's preprocessor decides the subscriptions, so it is made here, from the
  // checkpoint's config (the assets wait for activate(), the weights are not read).
  if (checkpoint_->empty()) {
    return invalid_argument(where() + ": param 'checkpoint' is required (a checkpoint folder: config.json and "
                            "the family's assets)");
  }
  auto family = model::find_family("auto", *checkpoint_);
  if (!family) return family.status().with_context(where());
  model::PreprocessorOptions po;
  po.embodiment = *embodiment_;
  po.pad_to = *pad_to_;
  po.cameras = *cameras_;
  if (!tokenizer_->empty()) po.assets.emplace_back("tokenizer", *tokenizer_);
  if (!norm_stats_->empty()) po.assets.emplace_back("norm_stats", *norm_stats_);
  po.long_prompt = *on_long_prompt_ == "truncate" ? model::LongPrompt::kTruncate : model::LongPrompt::kError;
  po.variant = *model_type_;
  po.state_dim = *state_dim_;
  po.threads = *threads_;
  auto pre = (*family)->make_preprocessor(*checkpoint_, po);
  if (!pre) return pre.status().with_context(where());
  pre_ = std::move(*pre);

  // A flat state vector is split into the groups in their order; one group may take the rest.
  state_total_ = 0;
  open_group_ = -1;
  for (std::size_t i = 0; i < pre_->state_groups().size(); ++i) {
    const model::StateGroupSpec& g = pre_->state_groups()[i];
    if (g.dim > 0) {
      state_total_ += g.dim;
    } else if (open_group_ < 0) {
      open_group_ = static_cast<int>(i);
    } else {
      return internal_error(where() + ": the preprocessor's state groups " +
                            pre_->state_groups()[static_cast<std::size_t>(open_group_)].name + " and " + g.name +
                            " both have no fixed width");
    }
  }
  const auto dflt = static_cast<int>(default_state_->size());
  if (*state_dim_ > 0 && dflt > 0 && dflt != *state_dim_) {
    return invalid_argument(where() + ": default_state has " + std::to_string(dflt) + " values; it needs state_dim (" +
                            std::to_string(*state_dim_) + ") values");
  }
  for (double v : *default_state_) {
    if (!std::isfinite(v)) return invalid_argument(where() + ": default_state holds " + std::to_string(v));
  }
  EDGEVLA_ASSIGN_OR_RETURN(observation_, spec.publisher<msgs::Observation>("observation"));
  cameras_in_.clear();
  cameras_in_.reserve(pre_->cameras().size());
  for (const std::string& slot : pre_->cameras()) cameras_in_.push_back({slot, "image/" + slot, {}, {}, {}, 0, 0});
  // The first camera's frame makes the observation (without a rate); every other input is kept
  // for the next one, so this node's executor spins for no upstream callback but that camera's.
  const QoS held = QoS::keep_latest().held_input();
  for (std::size_t i = 0; i < cameras_in_.size(); ++i) {
    EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::Image>(
        cameras_in_[i].topic_name, *rate_hz_ <= 0 && i == 0 ? QoS::keep_latest() : held,
        [this, i](const msgs::Image& m) { on_image(i, m); }));
  }
  EDGEVLA_RETURN_IF_ERROR(
      spec.subscribe<msgs::RobotState>("state", held, [this](const msgs::RobotState& m) { on_state(m); }));
  EDGEVLA_RETURN_IF_ERROR(spec.subscribe<msgs::Prompt>("prompt", held, [this](const msgs::Prompt& m) { on_prompt(m); }));
  if (*wait_for_chunk_) {
    EDGEVLA_RETURN_IF_ERROR(
        spec.subscribe<msgs::ActionChunk>("actions", held, [this](const msgs::ActionChunk& m) { on_chunk(m); }));
  }
  if (*rate_hz_ > 0) {
    const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / *rate_hz_));
    EDGEVLA_RETURN_IF_ERROR(spec.timer("publish", period, [this] { on_tick(); }));
  }
  return Status::ok();
}

Status PreprocessNode::activate() {
  EDGEVLA_RETURN_IF_ERROR(pre_->load().with_context(where()));
  for (Camera& c : cameras_in_) {
    c.header.reset();
    c.frame.reset();
    c.rgb.clear();
  }
  state_.reset();
  if (!default_state_->empty()) {
    auto s = make_state(*default_state_, 0);
    if (!s) return s.status().with_context(where() + ": default_state");
    s->from_param = true;
    state_ = std::move(*s);
  }
  // A default prompt the model refuses whatever the state is a configuration error.
  if (!prompt_->empty()) EDGEVLA_RETURN_IF_ERROR(pre_->check_prompt(*prompt_).with_context(where() + ": param prompt"));
  prompt_message_.reset();
  seen_prompt_param_ = *prompt_;
  inputs_changed_ = false;
  in_flight_ = false;
  waiting_logged_.clear();
  noted_prompt_.clear();
  std::vector<std::string> groups;
  for (const model::StateGroupSpec& g : pre_->state_groups()) {
    groups.push_back(g.name + " " + (g.dim > 0 ? std::to_string(g.dim) : std::string("any")));
  }
  log().info("{}: {} camera(s) ({}), state groups ({}), frames resized on {} thread(s), checkpoint {}", where(),
             cameras_in_.size(), join(pre_->cameras()), join(groups), pre_->threads(), *checkpoint_);
  return Status::ok();
}

Status PreprocessNode::deactivate() {
  state_.reset();
  for (Camera& c : cameras_in_) {
    c.header.reset();
    c.rgb = {};
  }
  scratch_ = {};
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
  // A rejected frame leaves the camera's RGB untouched, so the previous frame stays in use.
  Status s = model::to_rgb8(image.pixels(), *format, scratch_);
  const int height = s.is_ok() ? static_cast<int>(image.pixels().shape()[0]) : 0;
  const int width = s.is_ok() ? static_cast<int>(image.pixels().shape()[1]) : 0;
  if (s.is_ok()) s = pre_->check_frame(cam.slot, height, width);
  if (!s.is_ok()) {
    report_bad_input(cam.topic_name, s);
    return;
  }
  std::swap(cam.rgb, scratch_);
  cam.height = height;
  cam.width = width;
  cam.header = image.header();
  auto frame = image.message().int_field("frame");
  cam.frame = frame ? std::optional<std::int64_t>(*frame) : std::nullopt;
  inputs_changed_ = true;
  if (*rate_hz_ <= 0 && index == 0) publish_observation();
}

Expected<PreprocessNode::State> PreprocessNode::make_state(std::span<const double> raw, std::int64_t stamp_ns) const {
  const auto d = static_cast<int>(raw.size());
  if (*state_dim_ > 0 && d != *state_dim_) {
    return invalid_argument("the state has " + std::to_string(d) + " values but param state_dim is " +
                            std::to_string(*state_dim_));
  }
  EDGEVLA_RETURN_IF_ERROR(pre_->check_state(raw));
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!std::isfinite(raw[i])) {
      return invalid_argument("state[" + std::to_string(i) + "] is " + std::to_string(raw[i]) +
                              "; the robot sent a NaN or infinite state (kept the previous one)");
    }
  }
  State s;
  s.raw.assign(raw.begin(), raw.end());
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

  std::optional<Message> msg = observation(prompt);
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
                      "camera frames, robot state and instruction -> a policy's Observation (the checkpoint "
                      "family's preprocessor: image transform, state normalization, tokenization)");

}  // namespace edgevla::nodes
