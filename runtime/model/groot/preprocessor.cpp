#include "runtime/model/groot/preprocessor.hpp"

#include <filesystem>

#include "runtime/model/groot/config.hpp"
#include "runtime/model/groot/groot_family.hpp"

namespace edgevla::model::groot {

Expected<Preprocessor> Preprocessor::load(const std::string& dir, std::string_view tag, Letterbox letterbox) {
  EDGEVLA_ASSIGN_OR_RETURN(GrootConfig config, load_config(dir));
  EDGEVLA_ASSIGN_OR_RETURN(ProcessorConfig processor,
                           load_processor_config((std::filesystem::path(dir) / "processor_config.json").string()));
  if (!processor.use_albumentations) {
    return failed_precondition(processor.path + " does not set use_albumentations: true; edgevla implements GR00T's "
                               "albumentations image path only (the published checkpoints use it)");
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tokenizer tokenizer, Tokenizer::load(config.eagle_dir));
  EDGEVLA_ASSIGN_OR_RETURN(Embodiment embodiment, Embodiment::load(dir, tag, embodiment_limits(config)));
  const bool lb = letterbox == Letterbox::kAuto ? processor.letter_box_transform.value_or(false) : letterbox == Letterbox::kOn;
  return Preprocessor(std::move(processor), std::move(tokenizer), std::move(embodiment), lb);
}

Expected<ModelInputs> Preprocessor::run(std::span<const Frame> frames, std::string_view instruction,
                                        const RawState& state, std::optional<int> pad_to) const {
  const auto& views = embodiment_.views();
  if (frames.size() != views.size()) {
    std::string names;
    for (const auto& v : views) names += (names.empty() ? "" : ", ") + v;
    return invalid_argument("embodiment '" + embodiment_.tag() + "' takes " + std::to_string(views.size()) +
                            " view(s) (" + names + "), got " + std::to_string(frames.size()) +
                            " image(s); map one camera to each view in the launch file");
  }
  ModelInputs in;
  FrameOptions fo;
  fo.shortest_edge = processor_.shortest_image_edge;
  fo.crop_fraction = processor_.crop_fraction;
  fo.letterbox = letterbox_;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    auto f = preprocess_frame(frames[k], fo);
    if (!f) return f.status().with_context("view '" + views[k] + "'");
    std::vector<float> px(static_cast<std::size_t>(f->height) * static_cast<std::size_t>(f->width) * 3);
    normalize_pixels(*f, px.data());
    in.pixel_values.push_back(std::move(px));
    in.image_sizes.emplace_back(f->height, f->width);
    in.tokens_per_view.push_back(vision_tokens(*f));
  }
  std::string text(instruction);
  if (processor_.formalize_language) {
    EDGEVLA_ASSIGN_OR_RETURN(text, formalize_language(instruction));
  }
  in.prompt = render_prompt(text, in.tokens_per_view);
  EDGEVLA_ASSIGN_OR_RETURN(in.input_ids, tokenizer_.encode(in.prompt));
  in.attention_mask.assign(in.input_ids.size(), 1);
  if (pad_to) {
    if (*pad_to < static_cast<int>(in.input_ids.size())) {
      return out_of_range("the prompt is " + std::to_string(in.input_ids.size()) + " tokens (" +
                          std::to_string(frames.size()) + " view(s) and the instruction), longer than the " +
                          std::to_string(*pad_to) + " the graph pads to; shorten the instruction or raise the padding");
    }
    EDGEVLA_ASSIGN_OR_RETURN(std::int32_t pad, tokenizer_.token_id("<|endoftext|>"));
    const std::size_t n = static_cast<std::size_t>(*pad_to) - in.input_ids.size();
    in.input_ids.insert(in.input_ids.begin(), n, pad);  // left padding
    in.attention_mask.insert(in.attention_mask.begin(), n, 0);
  }
  in.state.assign(static_cast<std::size_t>(embodiment_.max_state_dim()), 0.0f);
  EDGEVLA_RETURN_IF_ERROR(embodiment_.normalize_state(state, in.state));
  in.embodiment_id = embodiment_.id();
  return in;
}

}  // namespace edgevla::model::groot
