#include "runtime/model/groot/preprocessor.hpp"

#include <algorithm>
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

namespace {

class SeamPreprocessor final : public model::Preprocessor {
 public:
  SeamPreprocessor(groot::Preprocessor pre, int pad_to)
      : pre_(std::move(pre)), pad_to_(pad_to), cameras_(pre_.embodiment().views()) {
    for (const StateGroup& g : pre_.embodiment().state_groups()) groups_.push_back({g.key, g.dim});
  }
  const std::vector<std::string>& cameras() const override { return cameras_; }
  const std::vector<model::StateGroupSpec>& state_groups() const override { return groups_; }

  Expected<std::vector<std::pair<std::string, Tensor>>> run(const model::PreprocessInput& input) const override {
    std::vector<Frame> frames;
    for (const std::string& view : cameras_) {
      const auto it = std::find_if(input.cameras.begin(), input.cameras.end(),
                                   [&](const model::CameraFrame& c) { return c.name == view; });
      if (it == input.cameras.end()) {
        std::string given;
        for (const auto& c : input.cameras) given += (given.empty() ? "" : ", ") + c.name;
        return invalid_argument("embodiment '" + pre_.embodiment().tag() + "' needs camera '" + view + "' (got " +
                                (given.empty() ? std::string("none") : given) +
                                "); name the camera after the view in the launch file");
      }
      frames.push_back(Frame{it->height, it->width, std::vector<std::uint8_t>(it->rgb.begin(), it->rgb.end())});
    }
    RawState raw;
    for (const auto& [group, values] : input.state) raw[group] = values;
    EDGEVLA_ASSIGN_OR_RETURN(ModelInputs in,
                             pre_.run(frames, input.prompt, raw, pad_to_ > 0 ? std::optional<int>(pad_to_) : std::nullopt));
    std::vector<std::pair<std::string, Tensor>> out;
    for (std::size_t k = 0; k < in.pixel_values.size(); ++k) {
      const auto [h, w] = in.image_sizes[k];
      EDGEVLA_ASSIGN_OR_RETURN(Tensor t, Tensor::from_values(std::span<const float>(in.pixel_values[k]), Shape{3, h, w}));
      out.emplace_back("image." + std::to_string(k), std::move(t));
    }
    const auto L = static_cast<std::int64_t>(in.input_ids.size());
    EDGEVLA_ASSIGN_OR_RETURN(Tensor ids, Tensor::from_values(std::span<const std::int32_t>(in.input_ids), Shape{L}));
    out.emplace_back("input_ids", std::move(ids));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor mask, Tensor::empty(DType::kBool, Shape{L}));
    for (std::int64_t i = 0; i < L; ++i) mask.data<bool>()[i] = in.attention_mask[static_cast<std::size_t>(i)] != 0;
    out.emplace_back("attention_mask", std::move(mask));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor state, Tensor::from_values(std::span<const float>(in.state),
                                                               Shape{static_cast<std::int64_t>(in.state.size())}));
    out.emplace_back("state", std::move(state));
    const std::int32_t id = in.embodiment_id;
    EDGEVLA_ASSIGN_OR_RETURN(Tensor eid, Tensor::from_values(std::span<const std::int32_t>(&id, 1), Shape{1}));
    out.emplace_back("embodiment_id", std::move(eid));
    for (const auto& [group, values] : raw) {
      EDGEVLA_ASSIGN_OR_RETURN(Tensor r, Tensor::from_values(std::span<const float>(values),
                                                             Shape{static_cast<std::int64_t>(values.size())}));
      out.emplace_back("raw_state." + group, std::move(r));
    }
    return out;
  }

 private:
  groot::Preprocessor pre_;
  int pad_to_;
  std::vector<std::string> cameras_;
  std::vector<model::StateGroupSpec> groups_;
};

}  // namespace

Expected<std::unique_ptr<model::Preprocessor>> make_seam_preprocessor(const std::string& dir,
                                                                      const model::PreprocessorOptions& options) {
  if (options.pad_to < 0) return invalid_argument("preprocessor pad_to must be >= 0");
  const std::string& tag = options.embodiment;
  EDGEVLA_ASSIGN_OR_RETURN(groot::Preprocessor pre, groot::Preprocessor::load(dir, tag));
  return std::unique_ptr<model::Preprocessor>(new SeamPreprocessor(std::move(pre), options.pad_to));
}

}  // namespace edgevla::model::groot
