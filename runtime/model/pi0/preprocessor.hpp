// pi0 / pi0.5's preprocess stage behind the family seam (model::Preprocessor; docs/model.md §9):
// each camera resized with padding to the model's image size (openpi's resize_with_pad, PIL's
// bilinear byte for byte) and scaled to [-1, 1]; the state normalized with the checkpoint's norm
// stats (pi0: z-score, pi0.5: quantiles to [-1, 1]; float64 from the raw values) and zero-padded
// to action_dim; the prompt tokenized (pi0: "prompt\n", kept per prompt; pi0.5: with the
// 256-bin discretized state in it).
//
// Made from config.json alone (the weights are not opened): the cameras are the config's slots
// or the subset options.cameras lists (the others are absent: the backbone masks them); one state
// group "state" of any width up to action_dim. load() reads the assets, "tokenizer"
// (<dir>/tokenizer.model) and "norm_stats" (<dir>/assets/<asset_id>/norm_stats.json), either one
// replaceable through options.assets, and settles pi0 against pi0.5 (options.variant, else
// config.json's model_type, else the weight set's header).
//
// Tensors: image.<slot> f32 [3,S,S], state f32 [action_dim], state_raw f32 [D] (the raw state,
// the action decoder's reference), tokens i32 [T], token_mask bool [T].
#pragma once

#include <memory>
#include <string>

#include "runtime/model/family.hpp"

namespace edgevla::model::pi0 {

Expected<std::unique_ptr<model::Preprocessor>> make_preprocessor(const std::string& dir,
                                                                 const PreprocessorOptions& options);

}  // namespace edgevla::model::pi0
