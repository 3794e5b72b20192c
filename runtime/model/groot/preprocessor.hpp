// GR00T N1.6's preprocess stage at the model layer: camera frames, the instruction and the raw
// robot state of one embodiment -> the model's inputs, as the published processor makes them
// (../shared/notes/groot-n16.md §2, §8; the reference is groot_numpy.py's `preprocess`):
// every view through the frame pipeline (image_pipeline.hpp) and normalised, the instruction
// cleaned (formalize_language, when the processor says so) and wrapped in the chat prompt with
// one `<IMG_CONTEXT>` per vision token of each view, tokenized, optionally left-padded, and the
// state normalised and zero-padded to max_state_dim (embodiment.hpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/family.hpp"
#include "runtime/model/groot/embodiment.hpp"
#include "runtime/model/groot/image_pipeline.hpp"
#include "runtime/model/groot/processor.hpp"
#include "runtime/model/groot/tokenizer.hpp"

namespace edgevla::model::groot {

enum class Letterbox { kAuto, kOn, kOff };  // auto: the processor config's letter_box_transform

struct ModelInputs {
  std::vector<std::vector<float>> pixel_values;  // per view, f32 [3, H, W] (empty: written to PixelsOut's storage)
  std::vector<std::pair<int, int>> image_sizes;  // per view, (H, W)
  std::vector<int> tokens_per_view;              // vision tokens after the unshuffle
  std::string prompt;                            // the text that was tokenized
  std::vector<std::int32_t> input_ids;
  std::vector<std::uint8_t> attention_mask;      // 1: a prompt token, 0: left padding
  std::vector<float> state;                      // normalised, [max_state_dim]
  int embodiment_id = 0;
};

class Preprocessor {
 public:
  // The processor config, tokenizer and embodiment `tag` of checkpoint folder `dir`.
  static Expected<Preprocessor> load(const std::string& dir, std::string_view tag, Letterbox letterbox = Letterbox::kAuto);

  // One observation. Errors name what is wrong and the fix: a view count other than the
  // embodiment's, a bad frame, a missing state group, a prompt longer than `pad_to`.
  // `pixels_out`, when given, returns where view k's normalised pixels go (f32 [3, height, width],
  // contiguous); its pixel_values[k] then stays empty.
  using PixelsOut = std::function<Expected<float*>(std::size_t view, int height, int width)>;
  Expected<ModelInputs> run(std::span<const FrameView> frames, std::string_view instruction, const RawState& state,
                            std::optional<int> pad_to = std::nullopt, const PixelsOut& pixels_out = {}) const;
  Expected<ModelInputs> run(std::span<const Frame> frames, std::string_view instruction, const RawState& state,
                            std::optional<int> pad_to = std::nullopt, const PixelsOut& pixels_out = {}) const;

  const Embodiment& embodiment() const { return embodiment_; }
  bool letterbox() const { return letterbox_; }
  // The frame pipeline in slices of rows over `threads` threads (1: the caller's alone; the
  // inputs are the same bytes at any count). run() is then for one caller at a time, copies
  // included: they share the pool.
  void use_threads(int threads);
  int threads() const;

 private:
  Preprocessor(ProcessorConfig processor, Tokenizer tokenizer, Embodiment embodiment, bool letterbox)
      : processor_(std::move(processor)), tokenizer_(std::move(tokenizer)), embodiment_(std::move(embodiment)),
        letterbox_(letterbox) {}
  ProcessorConfig processor_;
  Tokenizer tokenizer_;
  Embodiment embodiment_;
  bool letterbox_;
  std::shared_ptr<ThreadPool> pool_;  // none: one thread
};

// The preprocess stage behind the family seam (model::Preprocessor) for checkpoint `dir`, made
// without opening the weights: embodiment `options.embodiment` (empty: the checkpoint's only
// one); cameras named as the embodiment's video keys (options.cameras may only list all of
// them); the state as the embodiment's groups (check_state: a flat vector of their widths);
// tensors image.<k> f32 [3, H, W] (view k), input_ids i32 [L], attention_mask bool [L], state f32
// [max_state_dim], embodiment_id i32 [1], and raw_state.<group> f32 [d] for the action decoder.
// Asset overrides and LongPrompt::kTruncate are refused (a prompt longer than pad_to fails run()).
Expected<std::unique_ptr<model::Preprocessor>> make_seam_preprocessor(const std::string& dir,
                                                                      const model::PreprocessorOptions& options);

}  // namespace edgevla::model::groot
