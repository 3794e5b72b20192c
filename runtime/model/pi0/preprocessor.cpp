#include "runtime/model/pi0/preprocessor.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include "runtime/model/image_ops.hpp"
#include "runtime/model/pi0/checkpoint.hpp"
#include "runtime/model/pi0/config.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "runtime/model/pi0/tokenizer.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/util/thread_pool.hpp"

namespace edgevla::model::pi0 {
namespace {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// pi0 vs pi0.5 when config.json does not say: by the weight set (model.md §1), from the
// safetensors header only (the weights are not read).
Expected<ModelType> type_from_weights(const std::string& dir) {
  const std::string path = (fs::path(dir) / "model.safetensors").string();
  auto file = SafetensorsFile::open(path);
  if (!file) {
    return failed_precondition(
        "config.json gives no model_type and the weights cannot tell pi0 from pi0.5 (" + file.status().message() +
        "); add \"model_type\": \"pi0\" or \"pi05\" to config.json");
  }
  auto type = variant_of(*file);
  if (!type) return type.status().with_context("add \"model_type\" to config.json, or fix the weights");
  return *type;
}

class Pi0Preprocessor final : public model::Preprocessor {
 public:
  Pi0Preprocessor(std::string dir, ModelConfig config, const PreprocessorOptions& o, std::vector<std::string> cameras,
                  std::string tokenizer_path, std::string stats_path)
      : dir_(std::move(dir)), config_(std::move(config)), options_(o), cameras_(std::move(cameras)),
        tokenizer_path_(std::move(tokenizer_path)), stats_path_(std::move(stats_path)), views_(cameras_.size()) {
    // The cameras are resized side by side, one a task: more threads than cameras would idle.
    const int threads = std::min(frame_threads(o.threads), static_cast<int>(cameras_.size()));
    if (threads > 1) pool_ = std::make_unique<ThreadPool>(threads);
  }

  const std::vector<std::string>& cameras() const override { return cameras_; }
  int threads() const override { return pool_ ? pool_->size() : 1; }
  const std::vector<StateGroupSpec>& state_groups() const override { return groups_; }

  Status load() override {
    std::lock_guard lock(mu_);
    tok_.reset();
    cached_.reset();
    const std::string& v = options_.variant;
    if (!v.empty() && v != "auto") {
      EDGEVLA_ASSIGN_OR_RETURN(const ModelType type, parse_model_type(v));
      if (config_.model_type_given && config_.type != type) {
        return invalid_argument("model_type is " + v + " but " + dir_ + "/config.json says " +
                                std::string(model_type_name(config_.type)));
      }
      config_.type = type;
    } else if (!config_.model_type_given) {
      EDGEVLA_ASSIGN_OR_RETURN(config_.type, type_from_weights(dir_));  // token_len() and state_in_prompt() follow it
    }
    kind_ = norm_kind_for(config_.type);
    EDGEVLA_ASSIGN_OR_RETURN(stats_, load_norm_stats_for(dir_, config_, stats_path_, "state"));
    if (options_.state_dim > static_cast<int>(stats_.state.size())) {
      return invalid_argument("state_dim " + std::to_string(options_.state_dim) + " exceeds the " +
                              std::to_string(stats_.state.size()) + " state dims of the norm stats");
    }
    EDGEVLA_ASSIGN_OR_RETURN(Tokenizer tok, load_tokenizer_for(dir_, config_, tokenizer_path_));
    tok_ = std::move(tok);
    const int size = config_.vision.image_size;
    for (View& view : views_) {
      EDGEVLA_ASSIGN_OR_RETURN(view.canvas, Tensor::empty(DType::kU8, Shape{size, size, 3}));
    }
    return Status::ok();
  }

  Status check_frame(std::string_view, int height, int width) const override {
    return pad_geometry(width, height, config_.vision.image_size).status();
  }

  Status check_state(std::span<const double> raw) const override {
    std::lock_guard lock(mu_);
    return check_state_locked(raw);
  }

  Status check_prompt(std::string_view prompt) const override {
    std::lock_guard lock(mu_);
    EDGEVLA_RETURN_IF_ERROR(loaded());
    // pi0.5's length depends on the state: checked per observation.
    if (config_.state_in_prompt() || options_.long_prompt == LongPrompt::kTruncate) return Status::ok();
    EDGEVLA_ASSIGN_OR_RETURN(TokenizedPrompt t, tok_->encode(prompt, std::nullopt, config_.token_len()));
    if (!t.truncated) return Status::ok();
    return invalid_argument("the prompt needs " + std::to_string(t.full_length) +
                            " tokens but the model's budget (max_token_len) is " + std::to_string(config_.token_len()) +
                            "; shorten it or set on_long_prompt: truncate");
  }

  Expected<PreprocessOutput> run(const PreprocessInput& in) const override {
    std::lock_guard lock(mu_);
    EDGEVLA_RETURN_IF_ERROR(loaded());
    const auto group = std::find_if(in.state.begin(), in.state.end(), [](const auto& g) { return g.first == "state"; });
    if (group == in.state.end()) return invalid_argument("pi0 reads the robot's state as the group 'state'; it is missing");
    const std::vector<double>& raw = group->second;
    EDGEVLA_RETURN_IF_ERROR(check_state_locked(raw));
    std::vector<double> normalized(raw.size());
    EDGEVLA_RETURN_IF_ERROR(normalize(raw, stats_.state, kind_, normalized));

    PreprocessOutput out;
    EDGEVLA_ASSIGN_OR_RETURN(TokenizedPrompt tokens, tokenize(in.prompt, normalized));
    if (tokens.truncated) {
      const std::string need = std::to_string(tokens.full_length), budget = std::to_string(config_.token_len());
      if (options_.long_prompt == LongPrompt::kError) {
        return out_of_range("the prompt needs " + need + " tokens but the model's budget (max_token_len) is " + budget +
                            "; shorten it or set on_long_prompt: truncate ('" + in.prompt + "')");
      }
      out.note = "prompt cut from " + need + " to " + budget + " tokens: '" + in.prompt + "'";
    }

    // Images: resize with padding, then [-1, 1] in CHW; the cameras side by side on the pool,
    // each into its tensor's storage (taken here, on the caller's thread: a publisher's loans).
    const int size = config_.vision.image_size;
    std::vector<Tensor> images(cameras_.size());
    for (std::size_t k = 0; k < cameras_.size(); ++k) {
      EDGEVLA_ASSIGN_OR_RETURN(images[k], image_tensor(in, DType::kF32, Shape{3, size, size}));
    }
    std::vector<Status> done(cameras_.size(), Status::ok());
    auto one = [&](int k) {
      const auto i = static_cast<std::size_t>(k);
      done[i] = camera_input(in, i, images[i]);
    };
    if (pool_) {
      pool_->run(static_cast<int>(cameras_.size()), one);
    } else {
      for (std::size_t k = 0; k < cameras_.size(); ++k) one(static_cast<int>(k));
    }
    for (std::size_t k = 0; k < cameras_.size(); ++k) {
      EDGEVLA_RETURN_IF_ERROR(done[k]);
      out.tensors.emplace_back("image." + cameras_[k], std::move(images[k]));
    }

    // state f32 [action_dim]: normalized, zero-padded (openpi pads after normalizing).
    const int A = config_.action_dim;
    const auto T = static_cast<std::int64_t>(config_.token_len());
    EDGEVLA_ASSIGN_OR_RETURN(Tensor state, Tensor::empty(DType::kF32, Shape{A}));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor state_raw, Tensor::empty(DType::kF32, Shape{static_cast<std::int64_t>(raw.size())}));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor ids, Tensor::empty(DType::kI32, Shape{T}));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor mask, Tensor::empty(DType::kBool, Shape{T}));
    float* s = state.data<float>();
    std::fill(s, s + A, 0.0f);
    for (std::size_t i = 0; i < normalized.size(); ++i) s[i] = static_cast<float>(normalized[i]);
    for (std::size_t i = 0; i < raw.size(); ++i) state_raw.data<float>()[i] = static_cast<float>(raw[i]);
    std::copy(tokens.tokens.begin(), tokens.tokens.end(), ids.data<std::int32_t>());
    bool* m = mask.data<bool>();
    for (std::size_t i = 0; i < tokens.mask.size(); ++i) m[i] = tokens.mask[i] != 0;
    out.tensors.emplace_back("state", std::move(state));
    out.tensors.emplace_back("state_raw", std::move(state_raw));
    out.tensors.emplace_back("tokens", std::move(ids));
    out.tensors.emplace_back("token_mask", std::move(mask));
    return out;
  }

 private:
  // One camera's resize state, kept across frames (a stream of same-sized frames plans its
  // filter weights once).
  struct View {
    ImageResizer resizer;
    Tensor canvas;  // u8 [S, S, 3]
  };

  // Camera k's frame in `in`, resized with padding and scaled into `img` (f32 [3, S, S]).
  Status camera_input(const PreprocessInput& in, std::size_t k, Tensor& img) const {
    const std::string& slot = cameras_[k];
    const auto frame = std::find_if(in.cameras.begin(), in.cameras.end(),
                                    [&](const CameraFrame& c) { return c.name == slot; });
    if (frame == in.cameras.end()) return invalid_argument("camera '" + slot + "' has no frame");
    View& view = views_[k];
    const Shape shape{frame->height, frame->width, 3};
    if (frame->rgb.size() != static_cast<std::size_t>(shape.numel())) {
      return invalid_argument("camera '" + slot + "': " + std::to_string(frame->rgb.size()) + " bytes for a " +
                              std::to_string(frame->height) + "x" + std::to_string(frame->width) + " RGB frame");
    }
    // The caller's frame, read where it lies (read-only; it outlives this call).
    auto* bytes = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(frame->rgb.data()));
    EDGEVLA_ASSIGN_OR_RETURN(const Tensor rgb,
                             Tensor::from_buffer(Buffer::wrap(bytes, frame->rgb.size(), nullptr, false), DType::kU8, shape));
    EDGEVLA_RETURN_IF_ERROR(
        view.resizer.resize_with_pad(rgb, PixelFormat::kRgb8, view.canvas).with_context("camera '" + slot + "'"));
    return to_model_input(view.canvas, img);
  }

  Status loaded() const {
    if (tok_) return Status::ok();
    return failed_precondition("the pi0 preprocessor of '" + dir_ + "' has not loaded its tokenizer and norm stats (load())");
  }

  Status check_state_locked(std::span<const double> raw) const {
    EDGEVLA_RETURN_IF_ERROR(loaded());
    const auto d = static_cast<int>(raw.size());
    if (d == 0) return invalid_argument("the state is empty");
    if (d > config_.action_dim) {
      return invalid_argument("the state has " + std::to_string(d) + " values, more than the model's action_dim " +
                              std::to_string(config_.action_dim));
    }
    if (d > static_cast<int>(stats_.state.size())) {
      return invalid_argument("the state has " + std::to_string(d) + " values but the norm stats cover " +
                              std::to_string(stats_.state.size()));
    }
    return Status::ok();
  }

  // pi0.5: the prompt with the state in it; pi0: the prompt alone, its last tokens kept.
  Expected<TokenizedPrompt> tokenize(const std::string& prompt, std::span<const double> normalized) const {
    if (config_.state_in_prompt()) return tok_->encode(prompt, normalized, config_.token_len());
    if (!cached_ || cached_prompt_ != prompt) {
      EDGEVLA_ASSIGN_OR_RETURN(cached_, tok_->encode(prompt, std::nullopt, config_.token_len()));
      cached_prompt_ = prompt;
    }
    return *cached_;
  }

  std::string dir_;
  ModelConfig config_;
  PreprocessorOptions options_;
  std::vector<std::string> cameras_;
  std::vector<StateGroupSpec> groups_{{"state", 0}};
  std::string tokenizer_path_, stats_path_;  // "" = the checkpoint's

  // Set by load().
  NormKind kind_ = NormKind::kQuantile;
  NormStats stats_;
  std::optional<Tokenizer> tok_;

  mutable std::mutex mu_;  // run() keeps per-camera buffers and the last tokens
  mutable std::vector<View> views_;
  std::unique_ptr<ThreadPool> pool_;  // the cameras' resizing (none: the caller's thread)
  mutable std::string cached_prompt_;
  mutable std::optional<TokenizedPrompt> cached_;
};

}  // namespace

Expected<std::unique_ptr<model::Preprocessor>> make_preprocessor(const std::string& dir, const PreprocessorOptions& o) {
  EDGEVLA_ASSIGN_OR_RETURN(ModelConfig config, load_config((fs::path(dir) / "config.json").string()));
  if (!o.embodiment.empty() || o.pad_to != 0) {
    return invalid_argument("embodiment and pad_to are for checkpoints of several robots (GR00T); " + dir +
                            " is a pi0 / pi0.5 checkpoint (one robot, fixed token budget): remove them");
  }
  if (o.threads < 0) return invalid_argument("preprocessor threads must be >= 0 (0: by the core count)");
  std::string tokenizer, stats;
  for (const auto& [name, path] : o.assets) {
    if (name == "tokenizer") {
      tokenizer = path;
    } else if (name == "norm_stats") {
      stats = path;
    } else {
      return invalid_argument("the pi0 family has no asset '" + name + "' (its assets: tokenizer, norm_stats)");
    }
  }
  if (!o.variant.empty() && o.variant != "auto") EDGEVLA_RETURN_IF_ERROR(parse_model_type(o.variant).status());

  std::vector<std::string> cameras = o.cameras.empty() ? config.cameras : o.cameras;
  std::set<std::string> seen;
  for (const std::string& slot : cameras) {
    if (std::find(config.cameras.begin(), config.cameras.end(), slot) == config.cameras.end()) {
      return invalid_argument("camera slot '" + slot + "' (param cameras) is not one of the model's slots: " +
                              join(config.cameras));
    }
    if (!seen.insert(slot).second) return invalid_argument("camera slot '" + slot + "' is listed twice");
  }
  if (o.state_dim > config.action_dim) {
    return invalid_argument("state_dim " + std::to_string(o.state_dim) + " exceeds the model's action_dim " +
                            std::to_string(config.action_dim));
  }
  return std::unique_ptr<model::Preprocessor>(
      std::make_unique<Pi0Preprocessor>(dir, std::move(config), o, std::move(cameras), tokenizer, stats));
}

}  // namespace edgevla::model::pi0
