// What the cuda GR00T engine tests share: seeded tiny / small checkpoints (generated once a
// process, removed at its exit), the CPU and cuda engine pairs opened on them, observations of
// 1-3 views with left-padded prompts, one backbone + head run copied out, and the cases the
// tests walk.
#pragma once


#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/backends/backend.hpp"
#include "runtime/model/groot/generator.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/processor.hpp"
#include "tests/gpu/engine_compare.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::backends::groot_test {

namespace mg = model::groot;

using test::all_finite;
using test::cosine;
using test::rel_l2;

// A seeded bf16 checkpoint of `preset`, generated once a process.
inline const std::string& checkpoint(const std::string& preset) {
  static test::GeneratedDirs generated;  // removed at exit
  return generated.get("groot-" + preset, [&](const std::string& dir) {
    mg::GenerateOptions g;
    g.preset = preset;
    g.seed = 21;
    g.dtype = DType::kBF16;
    const Status s = mg::generate_checkpoint(g, dir);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  });
}

struct Engines {
  std::shared_ptr<const model::Model> model;
  std::unique_ptr<Engine> backbone, head;
};

inline Expected<Engines> open(const std::string& dir, std::string_view backend, Precision precision,
                       std::int64_t budget = 0) {
  Engines e;
  EDGEVLA_ASSIGN_OR_RETURN(const model::Family* fam, model::find_family("groot", dir));
  EDGEVLA_ASSIGN_OR_RETURN(e.model, fam->open(dir, {}));
  EDGEVLA_ASSIGN_OR_RETURN(auto b, make_backend(backend));
  EngineOptions o;
  o.threads = 2;
  o.max_steps = 8;
  o.device = backend == "cpu" ? "cpu" : "cuda:0";
  o.precision = precision;
  o.memory_budget_bytes = budget;
  EDGEVLA_ASSIGN_OR_RETURN(e.backbone, b->create(*e.model, model::kBackbone, o));
  EDGEVLA_ASSIGN_OR_RETURN(e.head, b->create(*e.model, model::kActionHead, o));
  return e;
}

inline const mg::GrootConfig& config_of(const Engines& e) {
  return mg::as_groot(*e.model).value()->config();
}

// One observation: views [3, h, w], a left-padded prompt with one <IMG_CONTEXT> run per view,
// state, embodiment, noise.
struct Inputs {
  std::vector<Tensor> images;
  Tensor ids, mask, state, embodiment, noise;
};

struct CaseSpec {
  std::vector<std::pair<int, int>> sizes;  // (h, w) per view, multiples of 28
  int pad = 0;                             // left padding tokens
  int text = 20;                           // instruction tokens
  int embodiment_index = 0;                // into the checkpoint's ids
  int steps = 4;
};

inline std::vector<int> embodiment_ids(const std::string& dir) {
  auto ids = mg::load_embodiment_ids((std::filesystem::path(dir) / "embodiment_id.json").string());
  EXPECT_TRUE(ids.has_value());
  std::vector<int> out;
  if (ids) {
    for (const auto& [tag, id] : *ids) {
      if (id < 32) out.push_back(id);
    }
  }
  return out;
}

inline Inputs make_inputs(const mg::GrootConfig& c, const CaseSpec& cs, int embodiment,
                   std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pix(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> word(
      1, static_cast<std::int32_t>(c.text.vocab_size) - 1);
  auto text_id = [&] {
    std::int32_t id = word(rng);
    while (id == c.image_token_id) id = word(rng);
    return id;
  };
  Inputs in;
  const std::int64_t merge = std::int64_t{c.vision.patch_size} * c.unshuffle_factor;
  std::vector<std::int32_t> ids(static_cast<std::size_t>(cs.pad), 0);
  std::vector<bool> valid(static_cast<std::size_t>(cs.pad), false);
  auto push = [&](std::int32_t id) {
    ids.push_back(id);
    valid.push_back(true);
  };
  for (int i = 0; i < cs.text; ++i) push(text_id());
  for (const auto& [h, w] : cs.sizes) {
    Tensor t = *Tensor::empty(DType::kF32, Shape{3, h, w});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = pix(rng);
    in.images.push_back(t);
    push(text_id());  // "<img>"
    for (std::int64_t k = 0; k < (h / merge) * (w / merge); ++k)
      push(static_cast<std::int32_t>(c.image_token_id));
    push(text_id());  // "</img>"
    push(text_id());
  }
  const auto L = static_cast<std::int64_t>(ids.size());
  in.ids = *Tensor::empty(DType::kI32, Shape{L});
  in.mask = *Tensor::empty(DType::kBool, Shape{L});
  for (std::int64_t i = 0; i < L; ++i) {
    in.ids.data<std::int32_t>()[i] = ids[static_cast<std::size_t>(i)];
    in.mask.data<bool>()[i] = valid[static_cast<std::size_t>(i)];
  }
  in.state = *Tensor::empty(DType::kF32, Shape{c.max_state_dim});
  for (std::int64_t i = 0; i < c.max_state_dim; ++i)
    in.state.data<float>()[i] = i < 24 ? 0.5f * normal(rng) : 0.0f;
  in.embodiment = *Tensor::empty(DType::kI32, Shape{1});
  *in.embodiment.data<std::int32_t>() = embodiment;
  in.noise = *Tensor::empty(DType::kF32, Shape{c.action_horizon, c.max_action_dim});
  for (std::int64_t i = 0; i < in.noise.numel(); ++i) in.noise.data<float>()[i] = normal(rng);
  return in;
}

struct Result {
  Tensor image_embeds, features, attention_mask, image_mask, actions, velocities;
  double backbone_ms = 0, head_ms = 0;
};

inline Status bind_backbone(Engine& b, const Inputs& in) {
  b.clear_bindings();
  for (std::size_t k = 0; k < in.images.size(); ++k) {
    EDGEVLA_RETURN_IF_ERROR(b.bind("image." + std::to_string(k), in.images[k]));
  }
  EDGEVLA_RETURN_IF_ERROR(b.bind("input_ids", in.ids));
  return b.bind("attention_mask", in.mask);
}

inline Status bind_head(Engine& h, const Inputs& in, const Tensor& features, const Tensor& mask,
                 const Tensor& image_mask) {
  h.clear_bindings();
  EDGEVLA_RETURN_IF_ERROR(h.bind("backbone_features", features));
  EDGEVLA_RETURN_IF_ERROR(h.bind("attention_mask", mask));
  EDGEVLA_RETURN_IF_ERROR(h.bind("image_mask", image_mask));
  EDGEVLA_RETURN_IF_ERROR(h.bind("state", in.state));
  EDGEVLA_RETURN_IF_ERROR(h.bind("embodiment_id", in.embodiment));
  return h.bind("noise", in.noise);
}

// Backbone then head; outputs copied out of the engines' buffers. `bf16_features`: the head
// reads the features converted to bf16.
inline Expected<Result> run(Engines& e, const Inputs& in, int steps, bool bf16_features = false) {
  Result r;
  const mg::GrootConfig& c = config_of(e);
  EDGEVLA_RETURN_IF_ERROR(bind_backbone(*e.backbone, in));
  std::int64_t n_img = 0;
  for (std::int64_t i = 0; i < in.ids.numel(); ++i)
    n_img += in.ids.data<std::int32_t>()[i] == c.image_token_id ? 1 : 0;
  EDGEVLA_ASSIGN_OR_RETURN(r.image_embeds,
                           Tensor::empty(DType::kF32, Shape{n_img, c.text.hidden_size}));
  EDGEVLA_RETURN_IF_ERROR(e.backbone->bind("image_embeds", r.image_embeds));
  EDGEVLA_RETURN_IF_ERROR(e.backbone->run({}));
  r.backbone_ms = e.backbone->last_timings().total_ms;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor f, e.backbone->output("backbone_features"));
  EDGEVLA_ASSIGN_OR_RETURN(r.features, f.clone());
  EDGEVLA_ASSIGN_OR_RETURN(Tensor m, e.backbone->output("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(r.attention_mask, m.clone());
  EDGEVLA_ASSIGN_OR_RETURN(Tensor im, e.backbone->output("image_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(r.image_mask, im.clone());
  Tensor features = r.features;
  if (bf16_features) {
    EDGEVLA_ASSIGN_OR_RETURN(features, Tensor::empty(DType::kBF16, r.features.shape()));
    auto* dst = reinterpret_cast<std::uint16_t*>(features.raw_data());
    for (std::int64_t i = 0; i < r.features.numel(); ++i)
      dst[i] = float_to_bfloat16(r.features.data<float>()[i]);
  }
  EDGEVLA_RETURN_IF_ERROR(bind_head(*e.head, in, features, r.attention_mask, r.image_mask));
  EDGEVLA_ASSIGN_OR_RETURN(
      Tensor vel, Tensor::empty(DType::kF32, Shape{steps, c.action_horizon, c.max_action_dim}));
  EDGEVLA_RETURN_IF_ERROR(e.head->bind("velocities", vel));
  EDGEVLA_RETURN_IF_ERROR(e.head->run(RunOptions{steps}));
  r.head_ms = e.head->last_timings().total_ms;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor a, e.head->output("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(r.actions, a.clone());
  r.velocities = vel;
  return r;
}

// rel-L2 and cosine of the backbone features over the real (attended) tokens only: padding
// rows carry no meaning.
inline std::pair<double, double> feature_errors(const Result& got, const Result& ref) {
  const std::int64_t L = ref.features.shape()[0], W = ref.features.shape()[1];
  std::vector<float> a, b;
  for (std::int64_t i = 0; i < L; ++i) {
    if (!ref.attention_mask.data<bool>()[i]) continue;
    a.insert(a.end(), got.features.data<float>() + i * W, got.features.data<float>() + (i + 1) * W);
    b.insert(b.end(), ref.features.data<float>() + i * W, ref.features.data<float>() + (i + 1) * W);
  }
  const auto n = static_cast<std::int64_t>(a.size());
  return {rel_l2(a.data(), b.data(), n), cosine(a.data(), b.data(), n)};
}

inline std::string describe(const CaseSpec& cs) {
  std::string s;
  for (const auto& [h, w] : cs.sizes)
    s += (s.empty() ? "" : ",") + std::to_string(h) + "x" + std::to_string(w);
  return std::to_string(cs.sizes.size()) + " view(s) " + s + ", pad " + std::to_string(cs.pad) +
         ", emb#" + std::to_string(cs.embodiment_index) + ", " + std::to_string(cs.steps) +
         " steps";
}

inline const std::vector<CaseSpec>& cases() {
  static const std::vector<CaseSpec> c = {
      {{{224, 224}}, 0, 20, 0, 4},
      {{{252, 336}, {224, 224}}, 5, 17, 1, 4},
      {{{196, 280}, {224, 224}, {168, 168}}, 3, 26, 0, 4},
      {{{252, 252}, {252, 252}, {196, 280}},
       0,
       35,
       1,
       4},  // views of one size: one batched attention
  };
  return c;
}

}  // namespace edgevla::backends::groot_test
