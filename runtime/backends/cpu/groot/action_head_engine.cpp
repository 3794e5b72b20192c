// GR00T N1.6's action head on the CPU (notes/groot-n16.md §3, §8): vlln over the backbone
// features, the cross-attention keys/values of those features once per chunk, the
// per-embodiment state encoder, then num_steps Euler steps from t = 0 to 1, each: the action
// encoder at the step's timestep bucket plus the position table, the DiT over [state; actions],
// the per-embodiment action decoder on the action rows, a += velocity / num_steps.
// The time conditioning of the default steps is computed when the engine is created; every
// buffer a run touches is allocated then too.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <set>

#include "runtime/backends/cpu/cpu_backend.hpp"
#include "runtime/backends/cpu/cpu_engine.hpp"
#include "runtime/backends/cpu/groot/dit.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/processor.hpp"
#include "runtime/model/groot/stage_inputs.hpp"

namespace edgevla::backends::cpu::groot {
namespace {

namespace mg = model::groot;

constexpr float kVllnEps = 1e-5f;

// The bucket of step k of n (upstream: int(k / n · buckets) in double precision).
int timestep_bucket(int k, int n, int buckets) {
  return static_cast<int>((static_cast<double>(k) / static_cast<double>(n)) * buckets);
}

class ActionHeadEngine final : public CpuEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const mg::GrootModel* gm, mg::as_groot(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kActionHead));
    EDGEVLA_RETURN_IF_ERROR(check_cpu_options(o, "groot action_head (cpu)", spec->weight_bytes));
    auto e = std::unique_ptr<ActionHeadEngine>(new ActionHeadEngine(gm->config(), *spec, o));
    EDGEVLA_RETURN_IF_ERROR(e->load(gm->checkpoint()));
    EDGEVLA_RETURN_IF_ERROR(e->allocate(m.default_num_steps()));
    return std::unique_ptr<Engine>(std::move(e));
  }

  Status run(const RunOptions& options) override;
  std::int64_t resident_bytes() const override {
    std::int64_t total = dit_.resident_bytes();
    for (const CategoryLinear* c : categories()) total += c->resident_bytes();
    for (const FloatBuffer* b :
         {&vl_text_, &vl_image_, &x_, &dec_, &hid_, &a_emb_, &tau_, &tau_proj_, &state_hid_,
          &state_feat_, &a_, &vel_, &mods_cached_, &mods_step_}) {
      total += cpu::resident_bytes(*b);
    }
    return total + static_cast<std::int64_t>((vlln_w_.size() + vlln_b_.size() + pos_.size()) *
                                             sizeof(float));
  }

 private:
  ActionHeadEngine(const mg::GrootConfig& c, const model::StageSpec& spec, const EngineOptions& o)
      : CpuEngine(std::string(mg::kFamily), spec, o),
        cfg_(c),
        max_steps_(std::max(1, o.max_steps)) {}
  Status load(const mg::Checkpoint& ck);
  Status allocate(int default_steps);
  Status check_inputs(const RunOptions& options, std::int64_t& n, std::int64_t& embodiment);
  void pack_features(std::int64_t n);
  void select_embodiment(std::int64_t e);
  void step(int bucket, const float* mods, float* velocity);
  std::array<CategoryLinear*, 7> categories() {
    return {&state1_, &state2_, &act1_, &act2_, &act3_, &dec1_, &dec2_};
  }
  std::array<const CategoryLinear*, 7> categories() const {
    return {&state1_, &state2_, &act1_, &act2_, &act3_, &dec1_, &dec2_};
  }

  mg::GrootConfig cfg_;
  int max_steps_;
  Dit dit_;
  CategoryLinear state1_, state2_, act1_, act2_, act3_, dec1_, dec2_;
  std::vector<float> vlln_w_, vlln_b_, pos_;  // pos_: the first action_horizon rows of the table
  std::set<std::int64_t> known_ids_;          // embodiment_id.json and the built-in tags
  std::int64_t selected_ = -1;                // the embodiment whose slices are selected

  int in_features_ = -1, in_mask_ = -1, in_image_ = -1, in_state_ = -1, in_embodiment_ = -1,
      in_noise_ = -1;
  int out_actions_ = -1, out_velocities_ = -1;

  // Time conditioning of the default steps' buckets, computed at creation.
  std::vector<int> cached_buckets_;
  FloatBuffer mods_cached_, mods_step_;
  // Backbone tokens after vlln: text (non-image, attended) and image ones, packed.
  FloatBuffer vl_text_, vl_image_;
  std::int64_t n_text_ = 0, n_image_ = 0;
  // Step activations.
  FloatBuffer x_, dec_, hid_, a_emb_, tau_, tau_proj_, state_hid_, state_feat_, a_, vel_;
  Tensor actions_own_;
};

Status ActionHeadEngine::load(const mg::Checkpoint& ck) {
  const std::string h(mg::kActionHeadPrefix);
  EDGEVLA_ASSIGN_OR_RETURN(dit_, Dit::load(ck));
  EDGEVLA_ASSIGN_OR_RETURN(state1_, CategoryLinear::load(ck, h + "state_encoder.layer1"));
  EDGEVLA_ASSIGN_OR_RETURN(state2_, CategoryLinear::load(ck, h + "state_encoder.layer2"));
  EDGEVLA_ASSIGN_OR_RETURN(act1_, CategoryLinear::load(ck, h + "action_encoder.W1"));
  EDGEVLA_ASSIGN_OR_RETURN(act2_, CategoryLinear::load(ck, h + "action_encoder.W2"));
  EDGEVLA_ASSIGN_OR_RETURN(act3_, CategoryLinear::load(ck, h + "action_encoder.W3"));
  EDGEVLA_ASSIGN_OR_RETURN(dec1_, CategoryLinear::load(ck, h + "action_decoder.layer1"));
  EDGEVLA_ASSIGN_OR_RETURN(dec2_, CategoryLinear::load(ck, h + "action_decoder.layer2"));
  auto vec = [&](const std::string& name, std::int64_t count, std::vector<float>& out) -> Status {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor t, ck.weight(name));
    if (t.numel() < count) {
      return invalid_argument("groot action_head: '" + name + "' has " + std::to_string(t.numel()) +
                              " values, needs " + std::to_string(count));
    }
    out.resize(static_cast<std::size_t>(count));
    to_f32(t.dtype(), t.raw_data(), out.data(), count);
    return Status::ok();
  };
  const std::int64_t W = cfg_.backbone_embedding_dim, E = cfg_.input_embedding_dim;
  EDGEVLA_RETURN_IF_ERROR(vec(h + "vlln.weight", W, vlln_w_));
  EDGEVLA_RETURN_IF_ERROR(vec(h + "vlln.bias", W, vlln_b_));
  EDGEVLA_RETURN_IF_ERROR(
      vec(h + "position_embedding.weight", std::int64_t{cfg_.action_horizon} * E, pos_));
  EDGEVLA_ASSIGN_OR_RETURN(
      mg::EmbodimentIds ids,
      mg::load_embodiment_ids((std::filesystem::path(cfg_.dir) / "embodiment_id.json").string()));
  for (const auto& [tag, id] : ids) known_ids_.insert(id);
  return Status::ok();
}

Status ActionHeadEngine::allocate(int default_steps) {
  EDGEVLA_ASSIGN_OR_RETURN(in_features_, input_slot("backbone_features"));
  EDGEVLA_ASSIGN_OR_RETURN(in_mask_, input_slot("attention_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(in_image_, input_slot("image_mask"));
  EDGEVLA_ASSIGN_OR_RETURN(in_state_, input_slot("state"));
  EDGEVLA_ASSIGN_OR_RETURN(in_embodiment_, input_slot("embodiment_id"));
  EDGEVLA_ASSIGN_OR_RETURN(in_noise_, input_slot("noise"));
  EDGEVLA_ASSIGN_OR_RETURN(out_actions_, output_slot("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(out_velocities_, output_slot("velocities"));
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim,
                     E = cfg_.input_embedding_dim;
  const std::int64_t hs = cfg_.hidden_size, S = Hz + 1;
  const std::int64_t L = inputs_[static_cast<std::size_t>(in_features_)].max_shape[0];
  const std::int64_t W = cfg_.backbone_embedding_dim;
  outputs_[static_cast<std::size_t>(out_velocities_)].max_shape = Shape{max_steps_, Hz, A};

  vl_text_.reserve(L * W);
  vl_image_.reserve(L * W);
  dit_.reserve(ctx_, S, L);
  x_.reserve(S * E);
  dec_.reserve(Hz * dit_.output_dim());
  hid_.reserve(Hz * hs);
  a_emb_.reserve(Hz * E);
  tau_.reserve(E);
  tau_proj_.reserve(E);
  state_hid_.reserve(hs);
  state_feat_.reserve(E);
  a_.reserve(Hz * A);
  vel_.reserve(Hz * A);
  mods_step_.reserve(dit_.modulation_size());
  EDGEVLA_ASSIGN_OR_RETURN(actions_own_, Tensor::empty(DType::kF32, Shape{Hz, A}));

  const int steps = std::clamp(default_steps, 1, max_steps_);
  mods_cached_.reserve(steps * dit_.modulation_size());
  for (int k = 0; k < steps; ++k) {
    cached_buckets_.push_back(timestep_bucket(k, steps, cfg_.num_timestep_buckets));
    dit_.modulation(ctx_, cached_buckets_.back(), mods_cached_.data() + k * dit_.modulation_size());
  }
  ctx_.pool().park();
  return Status::ok();
}

Status ActionHeadEngine::check_inputs(const RunOptions& options, std::int64_t& n,
                                      std::int64_t& embodiment) {
  const Tensor* f = bound_input(in_features_);
  EDGEVLA_ASSIGN_OR_RETURN(
      const mg::ActionHeadRun run,
      mg::check_action_head_inputs(
          mg::ActionHeadInputs{f, bound_input(in_mask_), bound_input(in_image_), bound_input(in_state_),
                               bound_input(in_embodiment_), bound_input(in_noise_)},
          cfg_, options.num_steps, max_steps_, state1_.slots(), known_ids_));
  n = run.rows;
  embodiment = run.embodiment;
  // The attended tokens' features are read on the host here: each must be finite.
  const std::int64_t W = cfg_.backbone_embedding_dim;
  const bool* amv = bound_input(in_mask_)->data<bool>();
  const std::size_t row_bytes = static_cast<std::size_t>(W) * dtype_size(f->dtype());
  for (std::int64_t i = 0; i < n; ++i) {
    if (amv[i] && !mg::all_finite(f->dtype(), f->raw_data() + static_cast<std::size_t>(i) * row_bytes, W)) {
      return invalid_argument("groot action_head: 'backbone_features' row " + std::to_string(i) +
                              " (an attended token) holds a non-finite value");
    }
  }
  return Status::ok();
}

// Attended tokens to f32, split into text and image, then vlln (LayerNorm with affine).
void ActionHeadEngine::pack_features(std::int64_t n) {
  const Tensor* f = bound_input(in_features_);
  const bool* am = bound_input(in_mask_)->data<bool>();
  const bool* im = bound_input(in_image_)->data<bool>();
  const std::int64_t W = cfg_.backbone_embedding_dim;
  const std::size_t row_bytes = static_cast<std::size_t>(W) * dtype_size(f->dtype());
  n_text_ = n_image_ = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!am[i]) continue;
    float* dst = im[i] ? vl_image_.data() + (n_image_++) * W : vl_text_.data() + (n_text_++) * W;
    to_f32(f->dtype(), f->raw_data() + static_cast<std::size_t>(i) * row_bytes, dst, W);
  }
  layer_norm(ctx_, vl_text_.data(), n_text_, W, vlln_w_.data(), vlln_b_.data(), kVllnEps,
             vl_text_.data());
  layer_norm(ctx_, vl_image_.data(), n_image_, W, vlln_w_.data(), vlln_b_.data(), kVllnEps,
             vl_image_.data());
}

void ActionHeadEngine::select_embodiment(std::int64_t e) {
  if (e == selected_) return;
  for (CategoryLinear* c : categories()) c->select(e);
  selected_ = e;
}

// One velocity evaluation at the current actions a_ and timestep bucket `bucket`.
void ActionHeadEngine::step(int bucket, const float* mods, float* velocity) {
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim,
                     E = cfg_.input_embedding_dim;
  const std::int64_t hs = cfg_.hidden_size, S = Hz + 1;
  float* x = x_.data();
  // Row 0: the state token.
  std::copy(state_feat_.data(), state_feat_.data() + E, x);
  // Action encoder: W2 on [W1 a, τ] split into W2[:E] · (W1 a) + (W2[E:] · τ + b2), since τ is
  // the same for every row. τ = [sin(t f), cos(t f)], f_i = exp(-i ln(1e4) / (E/2)), float32.
  const std::int64_t half = E / 2;
  const float step_ln = std::log(10000.0f) / static_cast<float>(half);
  float* tau = tau_.data();
  for (std::int64_t i = 0; i < half; ++i) {
    const float a = static_cast<float>(bucket) * std::exp(-static_cast<float>(i) * step_ln);
    tau[i] = std::sin(a);
    tau[half + i] = std::cos(a);
  }
  act2_.apply(ctx_, tau, 1, E, tau_proj_.data(), E, /*row0=*/E, /*rows_in=*/E, /*add_bias=*/true);
  act1_.apply(ctx_, a_.data(), Hz, A, a_emb_.data(), E);
  float* rows = x + E;
  act2_.apply(ctx_, a_emb_.data(), Hz, E, rows, E, 0, E, /*add_bias=*/false);
  add_bias(rows, Hz, E, E, tau_proj_.data());
  silu_inplace(rows, Hz * E);
  act3_.apply(ctx_, rows, Hz, E, a_emb_.data(), E);  // a_emb_ is free again
  for (std::int64_t r = 0; r < Hz; ++r) {
    const float* p = pos_.data() + r * E;
    const float* s = a_emb_.data() + r * E;
    float* d = rows + r * E;
    for (std::int64_t i = 0; i < E; ++i) d[i] = s[i] + p[i];
  }
  // DiT, then the decoder on the action rows.
  dit_.forward(ctx_, x, S, mods, 1, dec_.data());
  dec1_.apply(ctx_, dec_.data(), Hz, dit_.output_dim(), hid_.data(), hs);
  for (std::int64_t i = 0; i < Hz * hs; ++i) hid_.data()[i] = std::max(hid_.data()[i], 0.0f);
  dec2_.apply(ctx_, hid_.data(), Hz, hs, velocity, A);
}

Status ActionHeadEngine::run(const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const ParkOnExit park(ctx_.pool());
  timings_ = {};
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  std::int64_t n = 0, embodiment = 0;
  EDGEVLA_RETURN_IF_ERROR(check_inputs(options, n, embodiment));
  const std::int64_t Hz = cfg_.action_horizon, A = cfg_.max_action_dim, hs = cfg_.hidden_size;
  const Tensor* bound_actions = bound_output(out_actions_);
  const Tensor& actions = bound_actions ? *bound_actions : actions_own_;
  if (!(actions.shape() == Shape{Hz, A})) {
    return invalid_argument("groot action_head: output 'actions' is " +
                            actions.shape().to_string() + ", must be [" + std::to_string(Hz) + "," +
                            std::to_string(A) + "]");
  }
  const Tensor* velocities = bound_output(out_velocities_);
  if (velocities != nullptr && (velocities->shape()[0] < options.num_steps ||
                                velocities->shape()[1] != Hz || velocities->shape()[2] != A)) {
    return invalid_argument("groot action_head: output 'velocities' " +
                            velocities->shape().to_string() +
                            " must be [>= " + std::to_string(options.num_steps) + "," +
                            std::to_string(Hz) + "," + std::to_string(A) + "]");
  }

  // Once per chunk: vlln, the cross blocks' keys/values, the embodiment's slices, the state token.
  pack_features(n);
  dit_.cross_kv(ctx_, vl_text_.data(), n_text_, vl_image_.data(), n_image_);
  select_embodiment(embodiment);
  const Tensor* st = bound_input(in_state_);
  state1_.apply(ctx_, st->data<float>(), 1, cfg_.max_state_dim, state_hid_.data(), hs);
  for (std::int64_t i = 0; i < hs; ++i) state_hid_.data()[i] = std::max(state_hid_.data()[i], 0.0f);
  state2_.apply(ctx_, state_hid_.data(), 1, hs, state_feat_.data(), cfg_.input_embedding_dim);
  const double prepare_ms = ms_since(t0);

  float* a = a_.data();
  const float* noise = bound_input(in_noise_)->data<float>();
  std::copy(noise, noise + Hz * A, a);
  const float dt = static_cast<float>(1.0 / options.num_steps);
  for (int k = 0; k < options.num_steps; ++k) {
    const int bucket = timestep_bucket(k, options.num_steps, cfg_.num_timestep_buckets);
    const float* mods = nullptr;
    if (options.num_steps == static_cast<int>(cached_buckets_.size())) {
      mods = mods_cached_.data() + k * dit_.modulation_size();
    } else {
      dit_.modulation(ctx_, bucket, mods_step_.data());
      mods = mods_step_.data();
    }
    float* vel = velocities ? velocities->data<float>() + k * Hz * A : vel_.data();
    step(bucket, mods, vel);
    for (std::int64_t i = 0; i < Hz * A; ++i) a[i] += dt * vel[i];
  }
  std::copy(a, a + Hz * A, actions.data<float>());
  set_produced(out_actions_, actions);
  if (velocities != nullptr) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor vv, velocities->slice(0, 0, options.num_steps));
    set_produced(out_velocities_, std::move(vv));
  } else {
    set_produced(out_velocities_, Tensor());
  }
  timings_.total_ms = ms_since(t0);
  timings_.parts = {{"prepare", prepare_ms}, {"steps", timings_.total_ms - prepare_ms}};
  return Status::ok();
}

}  // namespace

const bool kRegistered = register_engine("cpu", std::string(mg::kFamily),
                                         std::string(model::kActionHead), ActionHeadEngine::create);

}  // namespace edgevla::backends::cpu::groot
