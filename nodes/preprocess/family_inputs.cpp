// The preprocess node's observation from the family seam: the newest frames (as RGB), the
// robot's state split into the preprocessor's state groups (in their order; one group without a
// fixed width takes the rest) and the prompt go to model::Preprocessor::run(); its tensors are
// published by name, images in shared memory loaned from the publisher (the family writes them there).
#include <algorithm>
#include <cstring>

#include "nodes/preprocess/preprocess_node.hpp"

namespace edgevla::nodes {

std::optional<Message> PreprocessNode::observation(const std::string& prompt) {
  model::PreprocessInput in;
  for (const Camera& c : cameras_in_) in.cameras.push_back({c.slot, c.height, c.width, c.rgb});
  in.prompt = prompt;
  const auto& groups = pre_->state_groups();
  const auto open_width = static_cast<std::int64_t>(state_->raw.size()) - state_total_;
  std::size_t at = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto width = static_cast<std::size_t>(static_cast<int>(i) == open_group_ ? open_width : groups[i].dim);
    in.state.emplace_back(groups[i].name, std::vector<double>(state_->raw.begin() + static_cast<std::ptrdiff_t>(at),
                                                              state_->raw.begin() + static_cast<std::ptrdiff_t>(at + width)));
    at += width;
  }
  // The images are written straight into loans from the publisher (shared memory): no copy.
  std::vector<const std::byte*> loaned;
  in.image_buffer = [&](DType dtype, const Shape& shape) -> Expected<Tensor> {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor t, observation_.loan(dtype, shape));
    loaned.push_back(t.raw_data());
    return t;
  };
  auto out = pre_->run(in);
  if (!out) {
    // out_of_range: the prompt is over the model's budget (a prompt to shorten, not a fault).
    report_bad_input(out.status().code() == StatusCode::kOutOfRange ? "prompt" : "observation",
                     out.status().with_context("no observation"));
    return std::nullopt;
  }
  if (!out->note.empty() && noted_prompt_ != prompt) {
    noted_prompt_ = prompt;
    log().warn("{}: {}", where(), out->note);
  }
  auto& tensors = out->tensors;
  auto state = std::find_if(tensors.begin(), tensors.end(), [](const auto& t) { return t.first == "state"; });
  if (state == tensors.end()) {
    report_bad_input("observation", internal_error("the family's preprocessor gave no 'state' tensor"));
    return std::nullopt;
  }
  auto msg = msgs::Observation::make(std::move(state->second));
  if (!msg) {
    report_bad_input("observation", msg.status());
    return std::nullopt;
  }
  for (auto& [name, t] : tensors) {
    if (name == "state") continue;
    if (!name.starts_with("image.")) {
      msg->set_tensor(name, std::move(t));
      continue;
    }
    // Images go into shared memory loaned from the publisher: no copy to other processes. A
    // family that made its own tensor (not from image_buffer) has it copied there.
    if (std::find(loaned.begin(), loaned.end(), t.raw_data()) != loaned.end()) {
      msg->set_tensor(name, std::move(t));
      continue;
    }
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
