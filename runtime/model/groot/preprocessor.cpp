#include "runtime/model/groot/preprocessor.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "runtime/model/groot/config.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/util/thread_pool.hpp"

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

void Preprocessor::use_threads(int threads) {
  if (threads <= 1) {
    pool_.reset();
  } else if (!pool_ || pool_->size() != threads) {
    pool_ = std::make_shared<ThreadPool>(threads, kFramePoolSpin);
  }
}

int Preprocessor::threads() const { return pool_ ? pool_->size() : 1; }

Expected<ModelInputs> Preprocessor::run(std::span<const Frame> frames, std::string_view instruction,
                                        const RawState& state, std::optional<int> pad_to,
                                        const PixelsOut& pixels_out) const {
  const std::vector<FrameView> views(frames.begin(), frames.end());
  return run(std::span<const FrameView>(views), instruction, state, pad_to, pixels_out);
}

Expected<ModelInputs> Preprocessor::run(std::span<const FrameView> frames, std::string_view instruction,
                                        const RawState& state, std::optional<int> pad_to,
                                        const PixelsOut& pixels_out) const {
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
  fo.pool = pool_.get();
  {
    std::optional<ParkOnExit> park;  // the workers asleep once the frames are done
    if (pool_) park.emplace(*pool_);
    for (std::size_t k = 0; k < frames.size(); ++k) {
      auto f = preprocess_frame(frames[k], fo);
      if (!f) return f.status().with_context("view '" + views[k] + "'");
      std::vector<float> px;
      float* dst = nullptr;
      if (pixels_out) {
        EDGEVLA_ASSIGN_OR_RETURN(dst, pixels_out(k, f->height, f->width));
      } else {
        px.resize(static_cast<std::size_t>(f->height) * static_cast<std::size_t>(f->width) * 3);
        dst = px.data();
      }
      normalize_pixels(*f, dst, fo.pool);
      in.pixel_values.push_back(std::move(px));
      in.image_sizes.emplace_back(f->height, f->width);
      in.tokens_per_view.push_back(vision_tokens(*f));
    }
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

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

class SeamPreprocessor final : public model::Preprocessor {
 public:
  SeamPreprocessor(groot::Preprocessor pre, int pad_to)
      : pre_(std::move(pre)), pad_to_(pad_to), cameras_(pre_.embodiment().views()) {
    for (const StateGroup& g : pre_.embodiment().state_groups()) groups_.push_back({g.key, g.dim});
  }
  const std::vector<std::string>& cameras() const override { return cameras_; }
  const std::vector<model::StateGroupSpec>& state_groups() const override { return groups_; }

  // The state groups' widths; at most one group may take whatever is left of a flat vector.
  Status check_groups(int state_dim) {
    for (std::size_t i = 0; i < groups_.size(); ++i) {
      if (groups_[i].dim > 0) {
        total_ += groups_[i].dim;
      } else if (open_ < 0) {
        open_ = static_cast<int>(i);
      } else {
        return invalid_argument("the robot's state groups " + groups_[static_cast<std::size_t>(open_)].name + " and " +
                                groups_[i].name + " have no fixed width, so a flat state vector cannot be split; add "
                                "their statistics to the checkpoint's statistics.json");
      }
    }
    if (state_dim > 0 && open_ < 0 && state_dim != total_) {
      return invalid_argument("state_dim is " + std::to_string(state_dim) + " but the robot's state groups (" +
                              group_list() + ") hold " + std::to_string(total_) + " values");
    }
    return Status::ok();
  }

  // Everything is read when it is made (the views come from the embodiment).
  Status load() override { return Status::ok(); }
  int threads() const override { return pre_.threads(); }
  // The frame pipeline takes any size it can crop; a bad frame fails run(), naming the view.
  Status check_frame(std::string_view, int, int) const override { return Status::ok(); }
  // A long prompt depends on the views' tokens: run() refuses it, naming its length.
  Status check_prompt(std::string_view) const override { return Status::ok(); }

  Status check_state(std::span<const double> state) const override {
    const auto d = static_cast<std::int64_t>(state.size());
    if (open_ < 0 ? d != total_ : d <= total_) {
      return invalid_argument("the state has " + std::to_string(d) + " values but the robot's state groups (" +
                              group_list() + ") need " + std::to_string(total_) +
                              (open_ < 0 ? "" : " plus at least one") + "; publish them concatenated in that order");
    }
    return Status::ok();
  }

  Expected<model::PreprocessOutput> run(const model::PreprocessInput& input) const override {
    std::vector<FrameView> frames;  // the node's frames, not copied
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
      frames.push_back(FrameView{it->height, it->width, it->rgb});
    }
    RawState raw;  // the model's float32
    for (const auto& [group, values] : input.state) raw[group].assign(values.begin(), values.end());
    // Each view's pixels are normalised straight into its image tensor (the node's loan).
    std::vector<Tensor> images;
    const groot::Preprocessor::PixelsOut into = [&](std::size_t, int h, int w) -> Expected<float*> {
      EDGEVLA_ASSIGN_OR_RETURN(Tensor t, model::image_tensor(input, DType::kF32, Shape{3, h, w}));
      images.push_back(std::move(t));
      return images.back().data<float>();
    };
    EDGEVLA_ASSIGN_OR_RETURN(
        ModelInputs in, pre_.run(frames, input.prompt, raw, pad_to_ > 0 ? std::optional<int>(pad_to_) : std::nullopt, into));
    model::PreprocessOutput result;
    auto& out = result.tensors;
    for (std::size_t k = 0; k < images.size(); ++k) out.emplace_back("image." + std::to_string(k), std::move(images[k]));
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
    return result;
  }

 private:
  std::string group_list() const {
    std::string s;
    for (const auto& g : groups_) {
      s += (s.empty() ? "" : ", ") + g.name + " " + (g.dim > 0 ? std::to_string(g.dim) : std::string("any"));
    }
    return s;
  }

  groot::Preprocessor pre_;
  int pad_to_;
  std::vector<std::string> cameras_;
  std::vector<model::StateGroupSpec> groups_;
  std::int64_t total_ = 0;  // the fixed-width groups' values summed
  int open_ = -1;           // the group without a fixed width, if any
};

}  // namespace

Expected<std::unique_ptr<model::Preprocessor>> make_seam_preprocessor(const std::string& dir,
                                                                      const model::PreprocessorOptions& options) {
  if (options.pad_to < 0) return invalid_argument("preprocessor pad_to must be >= 0");
  if (options.threads < 0) return invalid_argument("preprocessor threads must be >= 0 (0: by the core count)");
  if (!options.assets.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, path] : options.assets) names.push_back(name);
    return invalid_argument("the groot family takes no asset files in place of the checkpoint's (got " + join(names) +
                            "): its tokenizer and statistics are " + dir + "'s own; remove them");
  }
  if (options.long_prompt != model::LongPrompt::kError) {
    return invalid_argument("a groot prompt is never cut (a long one is refused, naming its length): leave the "
                            "long-prompt policy at error (on_long_prompt: error)");
  }
  if (!options.variant.empty() && options.variant != "auto" && options.variant != kVariant) {
    return invalid_argument("model_type is " + options.variant + " but '" + dir + "' holds a GR00T " +
                            std::string(kVariant) + " checkpoint; set model_type: auto");
  }
  EDGEVLA_ASSIGN_OR_RETURN(const std::string tag, embodiment_tag(dir, options.embodiment));
  EDGEVLA_ASSIGN_OR_RETURN(groot::Preprocessor pre, groot::Preprocessor::load(dir, tag));
  pre.use_threads(model::frame_threads(options.threads));
  const std::vector<std::string>& views = pre.embodiment().views();
  if (!options.cameras.empty()) {
    const std::set<std::string> asked(options.cameras.begin(), options.cameras.end()), needed(views.begin(), views.end());
    if (asked != needed || asked.size() != options.cameras.size()) {
      return invalid_argument("cameras are [" + join(options.cameras) + "] but the robot's views are [" + join(views) +
                              "]; groot needs every view once (leave cameras empty for all)");
    }
  }
  auto seam = std::make_unique<SeamPreprocessor>(std::move(pre), options.pad_to);
  EDGEVLA_RETURN_IF_ERROR(seam->check_groups(options.state_dim));
  return std::unique_ptr<model::Preprocessor>(std::move(seam));
}

}  // namespace edgevla::model::groot
