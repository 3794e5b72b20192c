// Action head on the CPU: the expert tower over the suffix (pi0: state token + actions, pi0.5:
// actions with adaRMS time conditioning), attending the prefix cache plus its own keys, and
// num_steps Euler steps from t = 1 to 0 (docs/model.md §7, §8). Everything a step touches is
// allocated when the engine is created.
#include <cmath>
#include <numbers>

#include "runtime/backends/cpu/cpu_backend.hpp"
#include "runtime/backends/cpu/cpu_engine.hpp"
#include "runtime/backends/cpu/pi0/pi0_weights.hpp"
#include "runtime/model/pi0/pi0_family.hpp"

namespace edgevla::backends::cpu {
namespace {

constexpr float kNormEps = 1e-6f;

class ActionHeadEngine final : public CpuEngine {
 public:
  static Expected<std::unique_ptr<Engine>> create(const model::Model& m, const EngineOptions& o) {
    EDGEVLA_ASSIGN_OR_RETURN(const model::pi0::Pi0Model* pm, model::pi0::as_pi0(m));
    EDGEVLA_ASSIGN_OR_RETURN(const model::StageSpec* spec, m.stage(model::kActionHead));
    EDGEVLA_RETURN_IF_ERROR(check_cpu_options(o, "action_head (cpu)", spec->weight_bytes));
    const model::Checkpoint& ck = pm->checkpoint();
    auto e = std::unique_ptr<ActionHeadEngine>(new ActionHeadEngine(ck.config(), *spec, o));
    EDGEVLA_ASSIGN_OR_RETURN(e->expert_, load_expert(ck));
    EDGEVLA_ASSIGN_OR_RETURN(e->heads_, load_heads(ck));
    EDGEVLA_RETURN_IF_ERROR(e->allocate());
    return std::unique_ptr<Engine>(std::move(e));
  }

  Status run(const RunOptions& options) override;

  std::int64_t resident_bytes() const override {
    std::int64_t total = 0;
    for (const GemmaLayer& l : expert_.layers) {
      for (const Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down, &l.in_mod, &l.post_mod}) {
        total += cpu::resident_bytes(*w);
      }
    }
    for (const Linear* w : {&expert_.final_mod, &heads_.action_in, &heads_.action_out, &heads_.state_proj,
                            &heads_.action_time_in, &heads_.action_time_out, &heads_.time_in, &heads_.time_out}) {
      total += cpu::resident_bytes(*w);
    }
    for (const FloatBuffer& b : pk_) total += cpu::resident_bytes(b);
    for (const FloatBuffer& b : pv_) total += cpu::resident_bytes(b);
    for (const FloatBuffer* b : {&xs_, &ys_, &q_, &k_, &v_, &o_, &tmp_, &gate_, &up_, &at_, &hid_}) {
      total += cpu::resident_bytes(*b);
    }
    return total + cpu::resident_bytes(attn_.logits);
  }

 private:
  ActionHeadEngine(const model::ModelConfig& c, const model::StageSpec& spec, const EngineOptions& o)
      : CpuEngine(std::string(model::pi0::kFamily), spec, o),
        cfg_(c), max_steps_(std::max(1, o.max_steps)) {}
  Status allocate();
  Status gather_prefix(std::int64_t& n_valid);
  void time_embedding(float t, float* out) const;
  void step(float t, std::int64_t n_valid, const float* x, float* velocity);

  model::ModelConfig cfg_;
  int max_steps_;
  TowerWeights expert_;
  HeadWeights heads_;
  bool pi05_ = false;
  std::vector<float> inv_freq_;
  std::vector<double> omega_;  // time-embedding frequencies (float64, as the reference)

  int in_kv_ = -1, in_mask_ = -1, in_state_ = -1, in_noise_ = -1;
  int out_actions_ = -1, out_velocities_ = -1;

  // Prefix keys/values the steps read: the bound f32 tensors when usable as they are, else
  // converted/compacted copies in pk_/pv_.
  std::vector<const float*> pk_ptr_, pv_ptr_;
  std::vector<FloatBuffer> pk_, pv_;
  std::vector<std::int32_t> key_limit_;
  // Step activations.
  FloatBuffer xs_, ys_, q_, k_, v_, o_, tmp_, gate_, up_, temb_, at_, hid_, cond_, mods_, vel_, x_;
  Tensor actions_own_;
  AttentionScratch attn_;
};

Status ActionHeadEngine::allocate() {
  pi05_ = cfg_.type == model::ModelType::kPi05;
  const std::int64_t P = cfg_.prefix_len(), L = cfg_.expert.depth, A = cfg_.action_dim;
  const std::int64_t Hz = cfg_.action_horizon, S = cfg_.suffix_len(), E = cfg_.expert.width;
  const std::int64_t H = cfg_.expert.num_heads, K = cfg_.expert.num_kv_heads, h = cfg_.expert.head_dim;
  EDGEVLA_ASSIGN_OR_RETURN(in_kv_, input_slot("kv"));
  EDGEVLA_ASSIGN_OR_RETURN(in_mask_, input_slot("mask"));
  EDGEVLA_ASSIGN_OR_RETURN(in_state_, input_slot("state"));
  EDGEVLA_ASSIGN_OR_RETURN(in_noise_, input_slot("noise"));
  EDGEVLA_ASSIGN_OR_RETURN(out_actions_, output_slot("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(out_velocities_, output_slot("velocities"));
  outputs_[static_cast<std::size_t>(out_velocities_)].max_shape = Shape{max_steps_, Hz, A};

  pk_ptr_.resize(static_cast<std::size_t>(L));
  pv_ptr_.resize(static_cast<std::size_t>(L));
  pk_.resize(static_cast<std::size_t>(L));
  pv_.resize(static_cast<std::size_t>(L));
  for (std::int64_t l = 0; l < L; ++l) {
    pk_[static_cast<std::size_t>(l)].reserve(P * K * h);
    pv_[static_cast<std::size_t>(l)].reserve(P * K * h);
  }
  key_limit_.resize(static_cast<std::size_t>(S));
  const std::int64_t F = cfg_.expert.mlp_dim;
  xs_.reserve(S * E);
  ys_.reserve(S * E);
  q_.reserve(S * H * h);
  o_.reserve(S * H * h);
  k_.reserve(S * K * h);
  v_.reserve(S * K * h);
  tmp_.reserve(S * std::max(E, A));
  gate_.reserve(S * F);
  up_.reserve(S * F);
  temb_.reserve(E);
  at_.reserve(Hz * 2 * E);
  hid_.reserve(Hz * E);
  cond_.reserve(E);
  mods_.reserve((2 * L + 1) * 3 * E);
  vel_.reserve(Hz * A);
  x_.reserve(Hz * A);
  attn_.reserve(H, S, P + S, ctx_.pool().size());
  ctx_.reserve_panels(std::max<std::int64_t>({E, 2 * E, H * h, F, A}));
  EDGEVLA_ASSIGN_OR_RETURN(actions_own_, Tensor::empty(DType::kF32, Shape{Hz, A}));
  inv_freq_ = model::pi0::rope_inv_freq(h);
  // Sin-cos time embedding: periods from 4e-3 to 4.0, geometric over E/2 frequencies.
  const std::int64_t half = E / 2;
  for (std::int64_t k = 0; k < half; ++k) {
    const double f = half > 1 ? static_cast<double>(k) / static_cast<double>(half - 1) : 0.0;
    const double period = 4e-3 * std::pow(4.0 / 4e-3, f);
    omega_.push_back(1.0 / period * 2.0 * std::numbers::pi);
  }
  return Status::ok();
}

void ActionHeadEngine::time_embedding(float t, float* out) const {
  const std::size_t half = omega_.size();
  for (std::size_t k = 0; k < half; ++k) {
    const double a = omega_[k] * static_cast<double>(t);
    out[k] = static_cast<float>(std::sin(a));
    out[half + k] = static_cast<float>(std::cos(a));
  }
}

// Points the steps at each layer's prefix keys/values: directly when the input is f32 and
// every token is valid, else through copies that keep only valid tokens, in f32.
Status ActionHeadEngine::gather_prefix(std::int64_t& n_valid) {
  const Tensor* mask = bound_input(in_mask_);
  const std::int64_t L = cfg_.expert.depth, kh = std::int64_t{cfg_.expert.num_kv_heads} * cfg_.expert.head_dim;
  const std::int64_t n = mask->numel();
  const bool* m = mask->data<bool>();
  n_valid = 0;
  for (std::int64_t i = 0; i < n; ++i) n_valid += m[i] ? 1 : 0;
  if (n_valid == 0) return invalid_argument("action_head prefix mask has no valid token");
  const Tensor* kv = bound_input(in_kv_);
  if (kv == nullptr) return invalid_argument("action_head needs the prefix 'kv' bound");
  if (kv->shape()[0] != L || kv->shape()[1] != 2 || kv->shape()[3] != cfg_.expert.num_kv_heads ||
      kv->shape()[4] != cfg_.expert.head_dim) {
    return invalid_argument("action_head 'kv' is " + kv->shape().to_string() + " but this model needs [" +
                            std::to_string(L) + ",2,n," + std::to_string(cfg_.expert.num_kv_heads) + "," +
                            std::to_string(cfg_.expert.head_dim) +
                            "] (backbone and action head must load the same checkpoint)");
  }
  if (kv->shape()[2] != n) {
    return invalid_argument("action_head 'kv' has " + std::to_string(kv->shape()[2]) +
                            " prefix rows but the prefix mask has " + std::to_string(n));
  }
  const std::size_t esize = dtype_size(kv->dtype());
  for (std::int64_t l = 0; l < L; ++l) {
    const auto li = static_cast<std::size_t>(l);
    const std::byte* k = kv->raw_data() + static_cast<std::size_t>((2 * l) * n * kh) * esize;
    const std::byte* v = kv->raw_data() + static_cast<std::size_t>((2 * l + 1) * n * kh) * esize;
    if (n_valid == n && kv->dtype() == DType::kF32) {
      pk_ptr_[li] = reinterpret_cast<const float*>(k);
      pv_ptr_[li] = reinterpret_cast<const float*>(v);
      continue;
    }
    float* dk = pk_[li].data();
    float* dv = pv_[li].data();
    for (std::int64_t i = 0, r = 0; i < n; ++i) {
      if (!m[i]) continue;
      to_f32(kv->dtype(), k + static_cast<std::size_t>(i * kh) * esize, dk + r * kh, kh);
      to_f32(kv->dtype(), v + static_cast<std::size_t>(i * kh) * esize, dv + r * kh, kh);
      ++r;
    }
    pk_ptr_[li] = dk;
    pv_ptr_[li] = dv;
  }
  return Status::ok();
}

// One evaluation of the velocity field at (x, t).
void ActionHeadEngine::step(float t, std::int64_t n_valid, const float* x, float* velocity) {
  const std::int64_t L = cfg_.expert.depth, A = cfg_.action_dim, Hz = cfg_.action_horizon;
  const std::int64_t S = cfg_.suffix_len(), E = cfg_.expert.width, F = cfg_.expert.mlp_dim;
  const std::int64_t H = cfg_.expert.num_heads, K = cfg_.expert.num_kv_heads, h = cfg_.expert.head_dim;
  float* xs = xs_.data();
  float* ys = ys_.data();
  float* temb = temb_.data();
  time_embedding(t, temb);

  // Suffix embeddings.
  if (pi05_) {
    linear(ctx_, x, Hz, A, heads_.action_in, xs, E);
    // cond = silu(time_mlp_out(silu(time_mlp_in(temb)))), then every norm's scale/shift/gate.
    linear(ctx_, temb, 1, E, heads_.time_in, tmp_.data(), E);
    silu_inplace(tmp_.data(), E);
    linear(ctx_, tmp_.data(), 1, E, heads_.time_out, cond_.data(), E);
    silu_inplace(cond_.data(), E);
    for (std::int64_t l = 0; l < L; ++l) {
      const GemmaLayer& w = expert_.layers[static_cast<std::size_t>(l)];
      linear(ctx_, cond_.data(), 1, E, w.in_mod, mods_.data() + (2 * l) * 3 * E, 3 * E);
      linear(ctx_, cond_.data(), 1, E, w.post_mod, mods_.data() + (2 * l + 1) * 3 * E, 3 * E);
    }
    linear(ctx_, cond_.data(), 1, E, expert_.final_mod, mods_.data() + 2 * L * 3 * E, 3 * E);
  } else {
    // State token, then action tokens: action_time_mlp_out(silu(action_time_mlp_in([a, temb]))).
    const float* state = bound_input(in_state_)->data<float>();
    linear(ctx_, state, 1, A, heads_.state_proj, xs, E);
    float* at = at_.data();
    linear(ctx_, x, Hz, A, heads_.action_in, at, 2 * E);
    for (std::int64_t r = 0; r < Hz; ++r) std::copy(temb, temb + E, at + r * 2 * E + E);
    linear(ctx_, at, Hz, 2 * E, heads_.action_time_in, hid_.data(), E);
    silu_inplace(hid_.data(), Hz * E);
    linear(ctx_, hid_.data(), Hz, E, heads_.action_time_out, xs + E, E);
  }

  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  for (std::int64_t l = 0; l < L; ++l) {
    const GemmaLayer& w = expert_.layers[static_cast<std::size_t>(l)];
    const float* mod_in = mods_.data() + (2 * l) * 3 * E;
    const float* mod_post = mods_.data() + (2 * l + 1) * 3 * E;
    if (pi05_) {
      ada_rms_norm(ctx_, xs, S, E, mod_in, mod_in + E, kNormEps, ys);
    } else {
      rms_norm(ctx_, xs, S, E, w.in_norm.data(), kNormEps, ys);
    }
    linear(ctx_, ys, S, E, w.q, q_.data(), H * h);
    linear(ctx_, ys, S, E, w.k, k_.data(), K * h);
    linear(ctx_, ys, S, E, w.v, v_.data(), K * h);
    rope(ctx_, q_.data(), S, H, h, H * h, n_valid, inv_freq_.data());
    rope(ctx_, k_.data(), S, K, h, K * h, n_valid, inv_freq_.data());
    attention(ctx_, q_.data(), S, H * h, H, K, h,
              KeyBlock{pk_ptr_[static_cast<std::size_t>(l)], pv_ptr_[static_cast<std::size_t>(l)], n_valid, K * h},
              KeyBlock{k_.data(), v_.data(), S, K * h}, pi05_ ? nullptr : key_limit_.data(), scale,
              o_.data(), H * h, attn_);
    if (pi05_) {
      linear(ctx_, o_.data(), S, H * h, w.o, tmp_.data(), E);
      gated_add(ctx_, xs, tmp_.data(), S, E, mod_in + 2 * E);
      ada_rms_norm(ctx_, xs, S, E, mod_post, mod_post + E, kNormEps, ys);
    } else {
      linear(ctx_, o_.data(), S, H * h, w.o, xs, E, /*accumulate=*/true);
      rms_norm(ctx_, xs, S, E, w.post_norm.data(), kNormEps, ys);
    }
    linear(ctx_, ys, S, E, w.gate, gate_.data(), F);
    linear(ctx_, ys, S, E, w.up, up_.data(), F);
    geglu(ctx_, gate_.data(), up_.data(), S, F);
    if (pi05_) {
      linear(ctx_, gate_.data(), S, F, w.down, tmp_.data(), E);
      gated_add(ctx_, xs, tmp_.data(), S, E, mod_post + 2 * E);
    } else {
      linear(ctx_, gate_.data(), S, F, w.down, xs, E, /*accumulate=*/true);
    }
  }
  // Final norm over the action rows only (pi0's state row is not read), then the output head.
  const float* rows = xs + (S - Hz) * E;
  if (pi05_) {
    const float* mod = mods_.data() + 2 * L * 3 * E;
    ada_rms_norm(ctx_, rows, Hz, E, mod, mod + E, kNormEps, ys);
  } else {
    rms_norm(ctx_, rows, Hz, E, expert_.final_norm.data(), kNormEps, ys);
  }
  linear(ctx_, ys, Hz, E, heads_.action_out, velocity, A);
}

Status ActionHeadEngine::run(const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const ParkOnExit park(ctx_.pool());
  timings_ = {};
  in_bound_.resize(inputs_.size());
  out_bound_.resize(outputs_.size());
  const std::int64_t A = cfg_.action_dim, Hz = cfg_.action_horizon, S = cfg_.suffix_len();
  if (options.num_steps < 1 || options.num_steps > max_steps_) {
    return out_of_range("action_head num_steps " + std::to_string(options.num_steps) + " is outside 1.." +
                        std::to_string(max_steps_) + " (raise the engine's max_steps to allow more)");
  }
  if (bound_input(in_mask_) == nullptr) return invalid_argument("action_head needs the prefix 'mask' bound");
  const Tensor* noise = bound_input(in_noise_);
  if (noise == nullptr || !(noise->shape() == Shape{Hz, A})) {
    return invalid_argument("action_head needs 'noise' [" + std::to_string(Hz) + "," + std::to_string(A) + "]");
  }
  if (!pi05_) {
    const Tensor* state = bound_input(in_state_);
    if (state == nullptr || state->numel() != A) {
      return invalid_argument("action_head (pi0) needs 'state' [" + std::to_string(A) +
                              "]: the normalized state padded to action_dim");
    }
  }
  std::int64_t n_valid = 0;
  EDGEVLA_RETURN_IF_ERROR(gather_prefix(n_valid));
  // pi0: the state token (row 0) sees the prefix and itself; action rows see everything.
  for (std::int64_t r = 0; r < S; ++r) {
    key_limit_[static_cast<std::size_t>(r)] =
        static_cast<std::int32_t>(n_valid + ((!pi05_ && r == 0) ? 1 : S));
  }

  const Tensor* bound_actions = bound_output(out_actions_);
  const Tensor& actions = bound_actions ? *bound_actions : actions_own_;
  if (!(actions.shape() == Shape{Hz, A})) return invalid_argument("action_head output 'actions' must be [H, A]");
  const Tensor* velocities = bound_output(out_velocities_);
  if (velocities != nullptr && (velocities->shape()[0] < options.num_steps || velocities->shape()[1] != Hz ||
                                velocities->shape()[2] != A)) {
    return invalid_argument("action_head output 'velocities' " + velocities->shape().to_string() + " must be [>= " +
                            std::to_string(options.num_steps) + "," + std::to_string(Hz) + "," +
                            std::to_string(A) + "]");
  }
  float* x = x_.data();
  std::copy(noise->data<float>(), noise->data<float>() + Hz * A, x);

  // Euler from t = 1 to 0 with t accumulated in float32, as the reference does.
  const float dt = -1.0f / static_cast<float>(options.num_steps);
  float t = 1.0f;
  int steps = 0;
  while (t >= -dt / 2 && steps < options.num_steps) {
    float* vel = velocities ? velocities->data<float>() + steps * Hz * A : vel_.data();
    step(t, n_valid, x, vel);
    for (std::int64_t i = 0; i < Hz * A; ++i) x[i] += dt * vel[i];
    t += dt;
    ++steps;
  }
  std::copy(x, x + Hz * A, actions.data<float>());
  set_produced(out_actions_, actions);
  if (velocities != nullptr) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor vv, velocities->slice(0, 0, steps));
    set_produced(out_velocities_, std::move(vv));
  } else {
    set_produced(out_velocities_, Tensor());
  }
  timings_.total_ms = ms_since(t0);
  timings_.parts = {{"steps", timings_.total_ms}};
  return Status::ok();
}

}  // namespace

const bool kRegistered = register_engine("cpu", std::string(model::pi0::kFamily), std::string(model::kActionHead),
                                         ActionHeadEngine::create);

}  // namespace edgevla::backends::cpu
