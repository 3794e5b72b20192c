#include "runtime/model/groot/generator.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <tuple>

#include "runtime/model/groot/checkpoint.hpp"
#include "runtime/model/groot/generator_tokenizer.hpp"
#include "runtime/model/pi0/generator.hpp"  // tensor_seed
#include "runtime/model/safetensors.hpp"
#include "runtime/util/rng.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

constexpr std::string_view kEagleName = "nvidia/Eagle-Block2A-2B-v2";

// ---- presets -------------------------------------------------------------------------------

Preset make_preset(std::string name, VisionConfig v, TextConfig t, int select_layer, int llm_layers_total,
                   int backbone_hidden, int hidden, int input_embedding, int max_seq_len, DitConfig dit,
                   int max_positions, int merges, std::int64_t shard) {
  Preset p;
  p.name = std::move(name);
  GrootConfig& c = p.config;
  c.model_name = std::string(kEagleName);
  c.vision = v;
  c.text = t;
  c.text.num_layers = llm_layers_total;
  c.select_layer = select_layer;
  c.unshuffle_factor = 2;
  c.backbone_embedding_dim = backbone_hidden;
  c.hidden_size = hidden;
  c.input_embedding_dim = input_embedding;
  c.max_state_dim = 128;
  c.max_action_dim = 128;
  c.action_horizon = 50;
  c.max_num_embodiments = 32;
  c.max_seq_len = max_seq_len;
  c.dit = dit;
  c.attend_text_every_n_blocks = 2;
  c.num_inference_timesteps = 4;
  c.num_timestep_buckets = 1000;
  c.shortest_image_edge = 256;
  c.crop_fraction = 0.95;
  c.formalize_language = true;
  c.apply_sincos_state_encoding = true;
  c.use_relative_action = true;
  p.max_position_embeddings = max_positions;
  p.bpe_merges = merges;
  p.max_shard_bytes = shard;
  return p;
}

VisionConfig vision(int hidden, int layers, int heads, int mlp) {
  return VisionConfig{hidden, layers, heads, mlp, 14, 256, 3, 1e-6};
}

TextConfig text(int hidden, int heads, int kv_heads, int head_dim, int mlp, std::int64_t vocab) {
  return TextConfig{hidden, 0, heads, kv_heads, head_dim, mlp, vocab, 1e-6, 1e6, true};
}

// ---- the weights in state-dict order -----------------------------------------------------------

enum class Init { kLinear, kCategory, kBias, kNorm, kPosition, kActionPosition, kEmbed };

struct Weight {
  std::string name;
  Shape shape;
  Init init;
};

std::vector<Weight> weights_in_order(const GrootConfig& c) {
  std::vector<Weight> w;
  auto lin = [&](const std::string& n, std::int64_t out, std::int64_t in, bool bias = true) {
    w.push_back({n + ".weight", Shape{out, in}, Init::kLinear});
    if (bias) w.push_back({n + ".bias", Shape{out}, Init::kBias});
  };
  auto ln = [&](const std::string& n, std::int64_t width) {
    w.push_back({n + ".weight", Shape{width}, Init::kNorm});
    w.push_back({n + ".bias", Shape{width}, Init::kBias});
  };
  const std::string V(kVisionPrefix), L(kLanguagePrefix), M(kMlp1Prefix), D(kDitPrefix), H(kActionHeadPrefix);
  const std::int64_t dv = c.vision.hidden_size, vm = c.vision.intermediate_size;
  lin(V + "embeddings.patch_embedding", dv, c.vision.patch_dim());
  w.push_back({V + "embeddings.position_embedding.weight", Shape{c.vision.num_patches, dv}, Init::kPosition});
  for (int i = 0; i < c.vision.num_layers; ++i) {
    const std::string p = V + "encoder.layers." + std::to_string(i) + ".";
    for (const char* n : {"k_proj", "v_proj", "q_proj", "out_proj"}) lin(p + "self_attn." + n, dv, dv);
    ln(p + "layer_norm1", dv);
    lin(p + "mlp.fc1", vm, dv);
    lin(p + "mlp.fc2", dv, vm);
    ln(p + "layer_norm2", dv);
  }
  ln(V + "post_layernorm", dv);
  // SigLIP's pooling head: in the published files, unused by GR00T.
  w.push_back({V + "head.probe", Shape{1, 1, dv}, Init::kEmbed});
  w.push_back({V + "head.attention.in_proj_weight", Shape{3 * dv, dv}, Init::kLinear});
  w.push_back({V + "head.attention.in_proj_bias", Shape{3 * dv}, Init::kBias});
  lin(V + "head.attention.out_proj", dv, dv);
  ln(V + "head.layernorm", dv);
  lin(V + "head.mlp.fc1", vm, dv);
  lin(V + "head.mlp.fc2", dv, vm);

  const TextConfig& t = c.text;
  const std::int64_t W = t.hidden_size, q = std::int64_t{t.num_heads} * t.head_dim,
                     kv = std::int64_t{t.num_kv_heads} * t.head_dim;
  w.push_back({std::string(kEmbedTokens), Shape{t.vocab_size, W}, Init::kEmbed});
  for (int i = 0; i < c.select_layer; ++i) {
    const std::string p = L + "model.layers." + std::to_string(i) + ".";
    lin(p + "self_attn.q_proj", q, W, false);
    lin(p + "self_attn.k_proj", kv, W, false);
    lin(p + "self_attn.v_proj", kv, W, false);
    lin(p + "self_attn.o_proj", W, q, false);
    w.push_back({p + "self_attn.q_norm.weight", Shape{t.head_dim}, Init::kNorm});
    w.push_back({p + "self_attn.k_norm.weight", Shape{t.head_dim}, Init::kNorm});
    lin(p + "mlp.gate_proj", t.intermediate_size, W, false);
    lin(p + "mlp.up_proj", t.intermediate_size, W, false);
    lin(p + "mlp.down_proj", W, t.intermediate_size, false);
    w.push_back({p + "input_layernorm.weight", Shape{W}, Init::kNorm});
    w.push_back({p + "post_attention_layernorm.weight", Shape{W}, Init::kNorm});
  }
  w.push_back({L + "model.norm.weight", Shape{W}, Init::kNorm});
  w.push_back({std::string(kLmHead), Shape{t.vocab_size, W}, Init::kEmbed});

  ln(M + "0", c.mlp1_in());
  lin(M + "1", W, c.mlp1_in());
  lin(M + "3", W, W);

  const std::int64_t e = c.dit.inner_dim();
  lin(D + "timestep_encoder.timestep_embedder.linear_1", e, 256);
  lin(D + "timestep_encoder.timestep_embedder.linear_2", e, e);
  for (int i = 0; i < c.dit.num_layers; ++i) {
    const std::string p = D + "transformer_blocks." + std::to_string(i) + ".";
    const std::int64_t kv_in = i % 2 == 1 ? e : c.backbone_embedding_dim;
    lin(p + "norm1.linear", 2 * e, e);
    lin(p + "attn1.to_q", e, e);
    lin(p + "attn1.to_k", e, kv_in);
    lin(p + "attn1.to_v", e, kv_in);
    lin(p + "attn1.to_out.0", e, e);
    lin(p + "ff.net.0.proj", c.ff_dim(), e);
    lin(p + "ff.net.2", e, c.ff_dim());
  }
  lin(D + "proj_out_1", 2 * e, e);
  lin(D + "proj_out_2", c.dit.output_dim, e);

  const std::int64_t n = c.max_num_embodiments, hs = c.hidden_size, ei = c.input_embedding_dim;
  auto cat = [&](const std::string& name, std::int64_t in, std::int64_t out) {
    w.push_back({H + name + ".W", Shape{n, in, out}, Init::kCategory});
    w.push_back({H + name + ".b", Shape{n, out}, Init::kBias});
  };
  cat("state_encoder.layer1", c.max_state_dim, hs);
  cat("state_encoder.layer2", hs, ei);
  cat("action_encoder.W1", c.max_action_dim, ei);
  cat("action_encoder.W2", 2 * ei, ei);
  cat("action_encoder.W3", ei, ei);
  cat("action_decoder.layer1", hs, hs);
  cat("action_decoder.layer2", hs, c.max_action_dim);
  ln(H + "vlln", c.backbone_embedding_dim);
  w.push_back({H + "position_embedding.weight", Shape{c.max_seq_len, ei}, Init::kActionPosition});
  return w;
}

std::string part_of(const std::string& key) {
  if (key.starts_with(kVisionPrefix)) return "vision";
  if (key.starts_with(kLanguagePrefix)) return "language";
  if (key.starts_with(kMlp1Prefix)) return "mlp1";
  if (key.starts_with(kDitPrefix)) return "dit";
  return "action_head_other";
}

// value = offset + scale · N(0, 1)
std::pair<double, double> offset_scale(const Weight& w) {
  switch (w.init) {
    case Init::kLinear: return {0.0, 1.0 / std::sqrt(static_cast<double>(w.shape[w.shape.rank() - 1]))};
    case Init::kCategory: return {0.0, 1.0 / std::sqrt(static_cast<double>(w.shape[1]))};
    case Init::kBias: return {0.0, 0.02};
    case Init::kNorm: return {1.0, 0.05};
    case Init::kPosition: return {0.0, 0.5};
    case Init::kActionPosition: return {0.0, 0.2};
    case Init::kEmbed: return {0.0, 1.0};
  }
  return {0.0, 1.0};
}

Status fill_tensor(const Weight& w, std::uint64_t seed, DType dtype, std::span<std::byte> out) {
  // lm_head is tied to embed_tokens: the same stream, the same values.
  const std::string gen = w.name == kLmHead ? std::string(kEmbedTokens) : w.name;
  const std::uint64_t s = model::tensor_seed(seed, gen);
  const auto [offset, scale] = offset_scale(w);
  const std::int64_t n = w.shape.numel();
  // Element i draws counters 2i + 1 and 2i + 2 of the tensor's stream, so slices fill in
  // parallel with the values of one pass.
  auto fill_range = [&, offset = offset, scale = scale](std::int64_t begin, std::int64_t end) {
    Rng rng(s, static_cast<std::uint64_t>(2 * begin));
    for (std::int64_t i = begin; i < end; ++i) {
      const auto v = static_cast<float>(offset + scale * rng.normal());
      if (dtype == DType::kF32) {
        std::memcpy(out.data() + i * 4, &v, 4);
      } else {
        const std::uint16_t b = dtype == DType::kBF16 ? float_to_bfloat16(v) : float_to_half(v);
        std::memcpy(out.data() + i * 2, &b, 2);
      }
    }
  };
  constexpr std::int64_t kPerThread = std::int64_t{1} << 20;
  const std::int64_t workers =
      std::clamp<std::int64_t>(n / kPerThread, 1, std::max<std::int64_t>(1, std::thread::hardware_concurrency()));
  if (workers == 1) {
    fill_range(0, n);
    return Status::ok();
  }
  std::vector<std::thread> pool;
  const std::int64_t per = (n + workers - 1) / workers;
  for (std::int64_t k = 0; k < workers; ++k) pool.emplace_back(fill_range, std::min(n, k * per), std::min(n, (k + 1) * per));
  for (std::thread& t : pool) t.join();
  return Status::ok();
}

// ---- the embodiments written into generated checkpoints ------------------------------------------
// Real tags and ids (spec §1); modality configs and statistics made up like upstream's fixtures,
// covering sin/cos and mean/std state, relative joints (one referenced to another state key),
// EEF poses (xyz + rot6d, xyz + rotvec) and degenerate statistics.

struct ActionDef {
  std::string key;
  int dim;
  std::string rep, type, format, state_key;
};

struct EmbodimentDef {
  std::string tag;
  int id, horizon;
  std::vector<std::string> video;
  std::vector<std::pair<std::string, int>> state;
  std::vector<std::string> state_sin_cos, state_mean_std;
  std::vector<ActionDef> action;
  std::vector<std::string> action_mean_std;
  std::map<std::string, std::vector<int>> degenerate;
};

std::vector<EmbodimentDef> embodiments() {
  const std::string R = "RELATIVE", A = "ABSOLUTE", N = "NON_EEF", E = "EEF", D = "DEFAULT";
  std::vector<ActionDef> libero;
  for (const char* k : {"x", "y", "z", "roll", "pitch", "yaw"}) libero.push_back({k, 1, A, N, D, ""});
  libero.push_back({"gripper", 1, A, N, D, ""});
  return {
      {"gr1", 20, 16, {"ego_view"},
       {{"left_arm", 7}, {"right_arm", 7}, {"left_hand", 6}, {"right_hand", 6}, {"waist", 3}},
       {"left_arm", "right_arm"}, {"waist"},
       {{"left_arm", 7, R, N, D, ""}, {"right_arm", 7, R, N, D, ""}, {"left_hand", 6, A, N, D, ""},
        {"right_hand", 6, A, N, D, ""}, {"waist", 3, A, N, D, ""}},
       {"waist"}, {}},
      {"libero_panda", 2, 16, {"image", "wrist_image"},
       {{"x", 1}, {"y", 1}, {"z", 1}, {"roll", 1}, {"pitch", 1}, {"yaw", 1}, {"gripper", 2}},
       {}, {}, libero, {}, {}},
      {"oxe_droid", 16, 32, {"exterior_image_1_left", "exterior_image_2_left", "wrist_image_left"},
       {{"eef_9d", 9}, {"gripper_position", 1}, {"joint_position", 7}},
       {}, {"joint_position"},
       {{"eef_9d", 9, R, E, "XYZ_ROT6D", ""}, {"gripper_position", 1, A, N, D, ""}},
       {}, {}},
      {"unitree_g1", 8, 30, {"ego_view"},
       {{"left_leg", 6}, {"right_leg", 6}, {"waist", 3}, {"left_arm", 7}, {"right_arm", 7}, {"left_hand", 7},
        {"right_hand", 7}},
       {"left_leg", "right_leg"}, {},
       {{"left_arm", 7, R, N, D, ""}, {"right_arm", 7, R, N, D, ""}, {"left_hand", 7, A, N, D, ""},
        {"right_hand", 7, A, N, D, ""}, {"waist", 3, A, N, D, ""}},
       {"left_hand", "right_hand"}, {}},
      {"new_embodiment", 10, 16, {"front", "wrist"},
       {{"eef", 6}, {"joints", 6}, {"gripper", 1}},
       {}, {"gripper"},
       {{"eef", 6, R, E, "XYZ_ROTVEC", ""}, {"arm", 6, R, N, D, "joints"}, {"gripper", 1, A, N, D, ""}},
       {"gripper"}, {{"joints", {3}}, {"arm", {3}}}},
  };
}

ojson list_or_null(const std::vector<std::string>& v) { return v.empty() ? ojson(nullptr) : ojson(v); }

// Statistics of one group: min < mean < max, std > 0, q01 / q99 inside [min, max]; degenerate
// dims get min == max == mean and std 0. rows > 0: per step.
ojson group_stats(Rng& rng, int dim, const std::vector<int>& degenerate, double scale, int rows) {
  const int n = std::max(rows, 1);
  std::vector<std::vector<double>> lo(n), hi(n), mean(n), std(n), q01(n), q99(n);
  for (int r = 0; r < n; ++r) {
    for (int d = 0; d < dim; ++d) {
      const double center = scale * rng.normal();
      const double half = scale * (0.2 + 1.3 * rng.uniform());
      const bool degen = std::find(degenerate.begin(), degenerate.end(), d) != degenerate.end();
      lo[r].push_back(degen ? center : center - half);
      hi[r].push_back(degen ? center : center + half);
      mean[r].push_back(degen ? center : center + (0.6 * rng.uniform() - 0.3) * half);
      std[r].push_back(degen ? 0.0 : (0.2 + 0.4 * rng.uniform()) * half);
      q01[r].push_back(degen ? center : center - 0.95 * half);
      q99[r].push_back(degen ? center : center + 0.95 * half);
    }
  }
  auto value = [&](const std::vector<std::vector<double>>& v) { return rows > 0 ? ojson(v) : ojson(v.front()); };
  return ojson{{"min", value(lo)}, {"max", value(hi)}, {"mean", value(mean)},
               {"std", value(std)}, {"q01", value(q01)}, {"q99", value(q99)}};
}

ojson statistics_json(std::uint64_t seed) {
  ojson out = ojson::object();
  for (const EmbodimentDef& e : embodiments()) {
    Rng rng(model::tensor_seed(seed, "statistics/" + e.tag), 0);
    auto deg = [&](const std::string& k) {
      auto it = e.degenerate.find(k);
      return it == e.degenerate.end() ? std::vector<int>{} : it->second;
    };
    ojson s = ojson::object(), a = ojson::object(), rel = ojson::object();
    for (const auto& [k, d] : e.state) s[k] = group_stats(rng, d, deg(k), 1.0, 0);
    for (const ActionDef& x : e.action) a[x.key] = group_stats(rng, x.dim, deg(x.key), 1.0, 0);
    for (const ActionDef& x : e.action) {
      if (x.rep == "RELATIVE") rel[x.key] = group_stats(rng, x.dim, deg(x.key), 0.1, e.horizon);
    }
    ojson entry = {{"state", s}, {"action", a}};
    if (!rel.empty()) entry["relative_action"] = rel;
    out[e.tag] = entry;
  }
  return out;
}

ojson processor_json(const GrootConfig& c) {
  auto mc = [](const std::vector<std::string>& keys, std::vector<int> delta, const ojson& sin_cos,
               const ojson& mean_std, const ojson& actions) {
    return ojson{{"delta_indices", delta}, {"modality_keys", keys},   {"sin_cos_embedding_keys", sin_cos},
                 {"mean_std_embedding_keys", mean_std}, {"action_configs", actions}};
  };
  ojson modality = ojson::object();
  for (const EmbodimentDef& e : embodiments()) {
    std::vector<std::string> state_keys, action_keys;
    for (const auto& [k, d] : e.state) state_keys.push_back(k);
    ojson acts = ojson::array();
    for (const ActionDef& a : e.action) {
      action_keys.push_back(a.key);
      acts.push_back({{"rep", a.rep}, {"type", a.type}, {"format", a.format},
                      {"state_key", a.state_key.empty() ? ojson(nullptr) : ojson(a.state_key)}});
    }
    std::vector<int> horizon(static_cast<std::size_t>(e.horizon));
    for (int i = 0; i < e.horizon; ++i) horizon[static_cast<std::size_t>(i)] = i;
    modality[e.tag] = {
        {"video", mc(e.video, {0}, nullptr, nullptr, nullptr)},
        {"state", mc(state_keys, {0}, list_or_null(e.state_sin_cos), list_or_null(e.state_mean_std), nullptr)},
        {"action", mc(action_keys, horizon, nullptr, list_or_null(e.action_mean_std), acts)},
        {"language", mc({"annotation.human.action.task_description"}, {0}, nullptr, nullptr, nullptr)}};
  }
  ojson kwargs = {{"modality_configs", modality},
                  {"image_crop_size", nullptr},
                  {"image_target_size", nullptr},
                  {"use_albumentations", true},
                  {"random_rotation_angle", nullptr},
                  {"color_jitter_params", {{"brightness", 0.3}, {"contrast", 0.4}, {"saturation", 0.5}, {"hue", 0.08}}},
                  {"shortest_image_edge", c.shortest_image_edge},
                  {"crop_fraction", c.crop_fraction},
                  {"model_name", c.model_name},
                  {"model_type", "eagle"},
                  {"formalize_language", c.formalize_language},
                  {"max_state_dim", c.max_state_dim},
                  {"max_action_dim", c.max_action_dim},
                  {"max_action_horizon", c.action_horizon},
                  {"use_percentiles", false},
                  {"clip_outliers", true},
                  {"apply_sincos_state_encoding", c.apply_sincos_state_encoding},
                  {"use_relative_action", c.use_relative_action}};
  return {{"processor_class", "Gr00tN1d6Processor"}, {"processor_kwargs", kwargs}};
}

ojson config_json(const Preset& p, const GenerateOptions& o, std::string_view dtype_name) {
  const GrootConfig& c = p.config;
  return {{"architectures", {"Gr00tN1d6"}},
          {"model_type", std::string(kModelType)},
          {"model_dtype", "bfloat16"},
          {"model_name", c.model_name},
          {"backbone_model_type", "eagle"},
          {"model_revision", nullptr},
          {"tune_top_llm_layers", 4},
          {"backbone_embedding_dim", c.backbone_embedding_dim},
          {"tune_llm", false},
          {"tune_visual", false},
          {"select_layer", c.select_layer},
          {"reproject_vision", false},
          {"use_flash_attention", true},
          {"load_bf16", true},
          {"eagle_collator", false},
          {"backbone_trainable_params_fp32", true},
          {"image_crop_size", nullptr},
          {"image_target_size", nullptr},
          {"shortest_image_edge", c.shortest_image_edge},
          {"crop_fraction", c.crop_fraction},
          {"random_rotation_angle", nullptr},
          {"color_jitter_params", nullptr},
          {"use_albumentations_transforms", true},
          {"formalize_language", c.formalize_language},
          {"apply_sincos_state_encoding", c.apply_sincos_state_encoding},
          {"use_relative_action", c.use_relative_action},
          {"max_state_dim", c.max_state_dim},
          {"max_action_dim", c.max_action_dim},
          {"action_horizon", c.action_horizon},
          {"hidden_size", c.hidden_size},
          {"input_embedding_dim", c.input_embedding_dim},
          {"add_pos_embed", true},
          {"attn_dropout", 0.2},
          {"use_vlln", true},
          {"max_seq_len", c.max_seq_len},
          {"use_alternate_vl_dit", true},
          {"attend_text_every_n_blocks", c.attend_text_every_n_blocks},
          {"diffusion_model_cfg",
           {{"positional_embeddings", nullptr},
            {"num_layers", c.dit.num_layers},
            {"num_attention_heads", c.dit.num_heads},
            {"attention_head_dim", c.dit.head_dim},
            {"norm_type", "ada_norm"},
            {"dropout", 0.2},
            {"final_dropout", true},
            {"output_dim", c.dit.output_dim},
            {"interleave_self_attention", true}}},
          {"num_inference_timesteps", c.num_inference_timesteps},
          {"noise_beta_alpha", 1.5},
          {"noise_beta_beta", 1.0},
          {"noise_s", 0.999},
          {"num_timestep_buckets", c.num_timestep_buckets},
          {"tune_projector", true},
          {"tune_diffusion_model", true},
          {"tune_vlln", true},
          {"state_dropout_prob", 0.0},
          {"state_additive_noise_scale", 0.0},
          {"max_num_embodiments", c.max_num_embodiments},
          {"torch_dtype", dtype_name},
          {"transformers_version", "4.51.3"},
          // Not in the published file: how this one was made.
          {"edgevla_generated", {{"config", p.name}, {"seed", o.seed}, {"generator", "edgevla model init --family groot"}}}};
}

ojson eagle_config_json(const Preset& p, const TokenizerLayout& tok) {
  const GrootConfig& c = p.config;
  const VisionConfig& v = c.vision;
  const TextConfig& t = c.text;
  return {{"architectures", {"Eagle3_VLForConditionalGeneration"}},
          {"model_type", "eagle_3_vl"},
          {"downsample_ratio", 1.0 / c.unshuffle_factor},
          {"dynamic_image_size", false},
          {"image_token_index", tok.id("<IMG_CONTEXT>")},
          {"mlp_connector_layers", 2},
          {"pad2square", false},
          {"select_layer", -1},
          {"use_pixel_shuffle", true},
          {"use_thumbnail", false},
          {"torch_dtype", "bfloat16"},
          {"text_config",
           {{"architectures", {"Qwen3ForCausalLM"}}, {"model_type", "qwen3"}, {"attention_bias", false},
            {"bos_token_id", tok.id("<|endoftext|>")}, {"eos_token_id", tok.id("<|im_end|>")},
            {"head_dim", t.head_dim}, {"hidden_act", "silu"}, {"hidden_size", t.hidden_size},
            {"intermediate_size", t.intermediate_size}, {"max_position_embeddings", p.max_position_embeddings},
            {"num_attention_heads", t.num_heads}, {"num_hidden_layers", t.num_layers},
            {"num_key_value_heads", t.num_kv_heads}, {"rms_norm_eps", t.rms_norm_eps}, {"rope_scaling", nullptr},
            {"rope_theta", t.rope_theta}, {"sliding_window", nullptr}, {"use_sliding_window", false},
            {"tie_word_embeddings", t.tie_word_embeddings}, {"vocab_size", t.vocab_size},
            {"torch_dtype", "bfloat16"}}},
          {"vision_config",
           {{"model_type", "siglip2_vision_model"}, {"hidden_act", "gelu_pytorch_tanh"},
            {"hidden_size", v.hidden_size}, {"intermediate_size", v.intermediate_size},
            {"layer_norm_eps", v.layer_norm_eps}, {"num_attention_heads", v.num_heads},
            {"num_channels", v.num_channels}, {"num_hidden_layers", v.num_layers}, {"num_patches", v.num_patches},
            {"patch_size", v.patch_size}, {"use_rope", false}, {"use_windows_attn", false}, {"window_size", 14},
            {"full_attention_indexes", ojson::array()}, {"torch_dtype", "bfloat16"}}}};
}

Status write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return unavailable("groot generator: cannot write '" + path.string() + "'");
  return Status::ok();
}

Status write_json(const fs::path& path, const ojson& j) { return write_text(path, j.dump(2) + "\n"); }

// Qwen2's split regex as tokenizer.json files carry it.
constexpr std::string_view kSplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen's chat format as the Eagle processor renders GR00T's conversation (for tools that want a
// template; edgevla renders the prompt itself).
constexpr std::string_view kChatTemplate =
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

Status write_eagle_folder(const fs::path& dir, const Preset& p, const TokenizerLayout& tok) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return unavailable("groot generator: cannot create '" + dir.string() + "': " + ec.message());
  ojson vocab = ojson::object();
  for (const auto& [s, id] : tok.vocab) vocab[s] = id;
  ojson merges = ojson::array();
  std::string merges_txt = "#version: 0.2\n";
  for (const auto& [a, b] : tok.merges) {
    merges.push_back(a + " " + b);
    merges_txt += a + " " + b + "\n";
  }
  ojson added = ojson::array(), added_map = ojson::object(), decoder = ojson::object();
  std::vector<std::string> special;
  for (const auto& [content, id, is_special] : tok.added) {
    added.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", is_special}});
    added_map[content] = id;
    decoder[std::to_string(id)] = {{"content", content}, {"lstrip", false}, {"normalized", false},
                                   {"rstrip", false},    {"single_word", false}, {"special", is_special}};
    if (is_special && content != "<|endoftext|>") special.push_back(content);
  }
  const ojson byte_level = {{"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  ojson bl = byte_level;
  bl["type"] = "ByteLevel";
  ojson tj = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", {{"type", "NFC"}}},
              {"pre_tokenizer",
               {{"type", "Sequence"},
                {"pretokenizers",
                 {{{"type", "Split"}, {"pattern", {{"Regex", std::string(kSplitRegex)}}}, {"behavior", "Isolated"},
                   {"invert", false}},
                  bl}}}},
              {"post_processor", bl},
              {"decoder", bl},
              {"model",
               {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false},
                {"ignore_merges", false}, {"vocab", vocab}, {"merges", merges}}}};
  const ojson pad = {{"content", "<|endoftext|>"}, {"lstrip", false}, {"normalized", false}, {"rstrip", false},
                     {"single_word", false}};
  ojson eos = pad;
  eos["content"] = "<|im_end|>";
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "tokenizer.json", tj));
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "vocab.json", vocab));
  EDGEVLA_RETURN_IF_ERROR(write_text(dir / "merges.txt", merges_txt));
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "added_tokens.json", added_map));
  EDGEVLA_RETURN_IF_ERROR(write_json(
      dir / "special_tokens_map.json",
      {{"additional_special_tokens", special}, {"eos_token", eos}, {"pad_token", pad}}));
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "tokenizer_config.json",
                                     {{"add_bos_token", false},
                                      {"add_eos_token", false},
                                      {"add_prefix_space", false},
                                      {"added_tokens_decoder", decoder},
                                      {"additional_special_tokens", special},
                                      {"bos_token", nullptr},
                                      {"clean_up_tokenization_spaces", false},
                                      {"eos_token", "<|im_end|>"},
                                      {"errors", "replace"},
                                      {"model_max_length", 32768},
                                      {"pad_token", "<|endoftext|>"},
                                      {"split_special_tokens", false},
                                      {"tokenizer_class", "Qwen2Tokenizer"},
                                      {"unk_token", nullptr}}));
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "chat_template.json", {{"chat_template", std::string(kChatTemplate)}}));
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "config.json", eagle_config_json(p, tok)));
  EDGEVLA_RETURN_IF_ERROR(write_json(dir / "processor_config.json",
                                     {{"image_end_token", "</img>"},
                                      {"image_placeholder", "image"},
                                      {"image_start_token", "<img>"},
                                      {"image_token", "<IMG_CONTEXT>"},
                                      {"pixels_per_token", 784},
                                      {"processor_class", "Eagle3_VLProcessor"},
                                      {"video_placeholder", "video"},
                                      {"video_token", "<IMG_CONTEXT>"}}));
  return write_json(dir / "preprocessor_config.json",
                    {{"do_convert_rgb", true},
                     {"do_normalize", true},
                     {"do_rescale", true},
                     {"do_resize", false},
                     {"image_mean", {0.5, 0.5, 0.5}},
                     {"image_std", {0.5, 0.5, 0.5}},
                     {"image_processor_type", "Eagle3_VLImageProcessorFast"},
                     {"resample", 3},
                     {"rescale_factor", 1.0 / 255.0},
                     {"data_format", "channels_first"}});
}

Status check_dtype(DType d) {
  if (d == DType::kF32 || d == DType::kBF16 || d == DType::kF16) return Status::ok();
  return invalid_argument("groot generator: dtype must be f32, bf16 or f16, got " + std::string(dtype_name(d)));
}

}  // namespace

Expected<Preset> preset(std::string_view name) {
  if (name == "tiny") {
    return make_preset("tiny", vision(32, 2, 2, 64), text(64, 4, 2, 16, 128, 1024), 2, 3, 64, 32, 48, 64,
                       DitConfig{4, 3, 16, 32}, 4096, 300, 2'000'000);
  }
  if (name == "small") {
    return make_preset("small", vision(128, 4, 4, 512), text(256, 8, 4, 32, 768, 4096), 4, 6, 256, 256, 256, 128,
                       DitConfig{8, 8, 32, 256}, 4096, 600, 40'000'000);
  }
  if (name == "full") {
    return make_preset("full", vision(1152, 27, 16, 4304), text(2048, 16, 8, 128, 6144, kQwenVocab), 16, 28, 2048,
                       1024, 1536, 1024, DitConfig{32, 32, 48, 1024}, 40960, 900, 5'000'000'000);
  }
  return invalid_argument("groot: unknown config '" + std::string(name) + "' (tiny, small or full)");
}

Expected<CheckpointPlan> plan_checkpoint(const GenerateOptions& o) {
  EDGEVLA_RETURN_IF_ERROR(check_dtype(o.dtype));
  EDGEVLA_ASSIGN_OR_RETURN(Preset p, preset(o.preset));
  EDGEVLA_RETURN_IF_ERROR(p.config.validate());
  const std::int64_t limit = o.max_shard_bytes > 0 ? o.max_shard_bytes : p.max_shard_bytes;
  const auto item = static_cast<std::int64_t>(dtype_size(o.dtype));
  CheckpointPlan plan;
  std::vector<CheckpointPlan::Shard> shards;
  for (const Weight& w : weights_in_order(p.config)) {
    const std::int64_t bytes = w.shape.numel() * item;
    if (shards.empty() || (!shards.back().tensors.empty() && shards.back().bytes + bytes > limit)) shards.emplace_back();
    shards.back().tensors.push_back(w.name);
    shards.back().bytes += bytes;
    ++plan.tensors;
    plan.params += w.shape.numel();
    plan.total_bytes += bytes;
    ++plan.keys_per_part[part_of(w.name)];
  }
  const std::size_t n = shards.size();
  for (std::size_t k = 0; k < n; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, n);
    shards[k].file = name;
  }
  plan.shards = std::move(shards);
  return plan;
}

Status generate_checkpoint(const GenerateOptions& o, const std::string& out_dir) {
  EDGEVLA_ASSIGN_OR_RETURN(CheckpointPlan plan, plan_checkpoint(o));
  EDGEVLA_ASSIGN_OR_RETURN(Preset p, preset(o.preset));
  const fs::path root(out_dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return unavailable("groot generator: cannot create '" + out_dir + "': " + ec.message());
  EDGEVLA_ASSIGN_OR_RETURN(TokenizerLayout tok, tokenizer_layout(p.bpe_merges, p.config.text.vocab_size));
  const std::string_view dtype_label = o.dtype == DType::kF32 ? "float32" : o.dtype == DType::kBF16 ? "bfloat16" : "float16";
  EDGEVLA_RETURN_IF_ERROR(write_json(root / "config.json", config_json(p, o, dtype_label)));
  EDGEVLA_RETURN_IF_ERROR(write_json(root / "processor_config.json", processor_json(p.config)));
  EDGEVLA_RETURN_IF_ERROR(write_json(root / "statistics.json", statistics_json(o.seed)));
  ojson ids = ojson::object();
  for (const EmbodimentDef& e : embodiments()) ids[e.tag] = e.id;
  EDGEVLA_RETURN_IF_ERROR(write_json(root / "embodiment_id.json", ids));
  EDGEVLA_RETURN_IF_ERROR(write_eagle_folder(root / fs::path(p.config.model_name).filename(), p, tok));

  std::map<std::string, const Weight*> by_name;
  const std::vector<Weight> weights = weights_in_order(p.config);
  for (const Weight& w : weights) by_name[w.name] = &w;
  std::map<std::string, std::string> weight_map;
  if (o.progress != nullptr) o.progress->set_total(plan.total_bytes);
  for (const CheckpointPlan::Shard& s : plan.shards) {
    std::vector<WriteEntry> entries;
    for (const std::string& name : s.tensors) {
      entries.push_back({name, o.dtype, by_name.at(name)->shape});
      weight_map[name] = s.file;
    }
    const FillFn fill = [&](const WriteEntry& e, std::span<std::byte> out) {
      return fill_tensor(*by_name.at(e.name), o.seed, o.dtype, out);
    };
    EDGEVLA_RETURN_IF_ERROR(write_safetensors((root / s.file).string(), entries, {{"format", "pt"}}, fill, o.progress));
  }
  ojson index = {{"metadata", {{"total_size", plan.total_bytes}}}, {"weight_map", ojson::object()}};
  for (const auto& [name, file] : weight_map) index["weight_map"][name] = file;
  return write_json(root / "model.safetensors.index.json", index);
}

}  // namespace edgevla::model::groot
