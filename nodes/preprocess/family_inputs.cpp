// The preprocess node's path for a model family with its own preprocessor behind the family
// seam (GR00T): the node collects the newest frames (as RGB), the robot's state and the
// prompt; the family's Preprocessor turns them into the stage tensors it names. The state
// arrives as one flat vector (RobotState.position) and is split into the family's state
// groups in their order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "nodes/preprocess/preprocess_node.hpp"

namespace edgevla::nodes {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

std::string group_list(const std::vector<model::StateGroupSpec>& groups) {
  std::string s;
  for (const auto& g : groups) {
    s += (s.empty() ? "" : ", ") + g.name + " " + (g.dim > 0 ? std::to_string(g.dim) : std::string("any"));
  }
  return s;
}

}  // namespace

Status PreprocessNode::configure_family(const model::Family& family, std::vector<std::string>& slots) {
  const std::string& dir = *checkpoint_;
  const std::string name(family.name());
  // pi0's params have no meaning here: a value set by hand would silently do nothing.
  if (!tokenizer_->empty() || !norm_stats_->empty() || *model_type_ != "auto") {
    return invalid_argument(where() + ": params tokenizer, norm_stats and model_type are for pi0 / pi0.5 checkpoints; " +
                            dir + " is a " + name + " checkpoint (its tokenizer and statistics are its own): remove them");
  }
  if (*on_long_prompt_ != "error") {
    return invalid_argument(where() + ": on_long_prompt: " + *on_long_prompt_ + " is for pi0 / pi0.5; a " + name +
                            " prompt is never cut (a long one is refused, naming its length): remove it");
  }
  auto model = family.open(dir, {});
  if (!model) return model.status().with_context(where());
  auto pre = (*model)->make_preprocessor({*embodiment_, *pad_to_});
  if (!pre) return pre.status().with_context(where() + " (param embodiment)");
  family_pre_ = std::move(*pre);

  const std::vector<std::string>& views = family_pre_->cameras();
  if (!cameras_->empty()) {
    const std::set<std::string> asked(cameras_->begin(), cameras_->end()), needed(views.begin(), views.end());
    if (asked != needed || asked.size() != cameras_->size()) {
      return invalid_argument(where() + ": param cameras is [" + join(*cameras_) + "] but the robot's views are [" +
                              join(views) + "]; " + name + " needs every view once (leave cameras empty for all)");
    }
  }
  slots = views;

  // The state groups' widths; at most one group may take whatever is left of a flat vector.
  const auto& groups = family_pre_->state_groups();
  state_total_ = 0;
  open_group_ = -1;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].dim > 0) {
      state_total_ += groups[i].dim;
    } else if (open_group_ < 0) {
      open_group_ = static_cast<int>(i);
    } else {
      return invalid_argument(where() + ": the robot's state groups " + groups[static_cast<std::size_t>(open_group_)].name +
                              " and " + groups[i].name + " have no fixed width, so a flat state vector cannot be "
                              "split; add their statistics to the checkpoint's statistics.json");
    }
  }
  if (*state_dim_ > 0 && open_group_ < 0 && *state_dim_ != state_total_) {
    return invalid_argument(where() + ": state_dim is " + std::to_string(*state_dim_) + " but the robot's state groups (" +
                            group_list(groups) + ") hold " + std::to_string(state_total_) + " values");
  }
  for (double v : *default_state_) {
    if (!std::isfinite(v)) return invalid_argument(where() + ": default_state holds " + std::to_string(v));
  }
  return Status::ok();
}

Expected<PreprocessNode::State> PreprocessNode::make_family_state(std::span<const double> raw,
                                                                  std::int64_t stamp_ns) const {
  const auto d = static_cast<std::int64_t>(raw.size());
  const auto& groups = family_pre_->state_groups();
  if (*state_dim_ > 0 && d != *state_dim_) {
    return invalid_argument("the state has " + std::to_string(d) + " values but param state_dim is " +
                            std::to_string(*state_dim_));
  }
  if (open_group_ < 0 ? d != state_total_ : d <= state_total_) {
    return invalid_argument("the state has " + std::to_string(d) + " values but the robot's state groups (" +
                            group_list(groups) + ") need " + std::to_string(state_total_) +
                            (open_group_ < 0 ? "" : " plus at least one") +
                            "; publish them concatenated in that order");
  }
  for (std::int64_t i = 0; i < d; ++i) {
    const double v = raw[static_cast<std::size_t>(i)];
    if (!std::isfinite(v)) {
      return invalid_argument("state[" + std::to_string(i) + "] is " + std::to_string(v) +
                              "; the robot sent a NaN or infinite state (kept the previous one)");
    }
  }
  State s;
  s.raw.assign(raw.begin(), raw.end());
  s.stamp_ns = stamp_ns;
  return s;
}

std::optional<Message> PreprocessNode::family_observation(const std::string& prompt) {
  model::PreprocessInput in;
  for (const Camera& c : cameras_in_) in.cameras.push_back({c.slot, c.height, c.width, c.rgb});
  in.prompt = prompt;
  const auto& groups = family_pre_->state_groups();
  const auto open_width = static_cast<std::int64_t>(state_->raw.size()) - state_total_;
  std::size_t at = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto width = static_cast<std::size_t>(static_cast<int>(i) == open_group_ ? open_width : groups[i].dim);
    in.state.emplace_back(groups[i].name, std::vector<float>(state_->raw.begin() + static_cast<std::ptrdiff_t>(at),
                                                             state_->raw.begin() + static_cast<std::ptrdiff_t>(at + width)));
    at += width;
  }
  auto tensors = family_pre_->run(in);
  if (!tensors) {
    report_bad_input("observation", tensors.status().with_context("no observation"));
    return std::nullopt;
  }
  auto state = std::find_if(tensors->begin(), tensors->end(), [](const auto& t) { return t.first == "state"; });
  if (state == tensors->end()) {
    report_bad_input("observation", internal_error("the family's preprocessor gave no 'state' tensor"));
    return std::nullopt;
  }
  auto msg = msgs::Observation::make(std::move(state->second));
  if (!msg) {
    report_bad_input("observation", msg.status());
    return std::nullopt;
  }
  for (auto& [name, t] : *tensors) {
    if (name == "state") continue;
    if (!name.starts_with("image.")) {
      msg->set_tensor(name, std::move(t));
      continue;
    }
    // Images go into shared memory loaned from the publisher: no copy to other processes.
    auto img = observation_.loan(t.dtype(), t.shape());
    if (!img) {
      report_bad_input("loan", img.status());
      return std::nullopt;
    }
    std::memcpy(img->raw_data(), t.raw_data(), t.nbytes());
    msg->set_tensor(name, std::move(*img));
  }
  return std::move(*msg);
}

}  // namespace edgevla::nodes
