#include "runtime/backends/forward_pi0.hpp"

#include <cstring>

#include "runtime/model/safetensors.hpp"
#include "runtime/util/rng.hpp"

namespace edgevla::model {
namespace {

Expected<Tensor> zeros(DType dtype, const Shape& shape) {
  EDGEVLA_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(dtype, shape));
  std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

}  // namespace

Expected<ForwardOutputs> run_forward(backends::Engine& backbone, backends::Engine& head,
                                     const ModelConfig& c, const ForwardInputs& in, bool diagnostics) {
  ForwardOutputs out;
  const std::int64_t C = c.num_cameras(), N = c.vision.tokens(), D = c.vlm.width, L = c.vlm.depth;
  const std::int64_t K = c.vlm.num_kv_heads, h = c.vlm.head_dim, T = in.tokens.numel();

  backbone.clear_bindings();
  for (std::int64_t s = 0; s < C; ++s) {
    if (in.images[static_cast<std::size_t>(s)].defined()) {
      EDGEVLA_RETURN_IF_ERROR(backbone.bind("image." + c.cameras[static_cast<std::size_t>(s)],
                                            in.images[static_cast<std::size_t>(s)]));
    }
  }
  EDGEVLA_RETURN_IF_ERROR(backbone.bind("tokens", in.tokens));
  EDGEVLA_RETURN_IF_ERROR(backbone.bind("token_mask", in.token_mask));
  const std::int64_t P = C * N + T;
  Tensor kv_host;
  if (diagnostics) {
    EDGEVLA_ASSIGN_OR_RETURN(out.vision_embeddings, zeros(DType::kF32, Shape{C, N, D}));
    EDGEVLA_RETURN_IF_ERROR(backbone.bind("vision_embeddings", out.vision_embeddings));
    // The cache in host memory and f32, whatever the backend, for the scatter below.
    EDGEVLA_ASSIGN_OR_RETURN(kv_host, Tensor::empty(DType::kF32, Shape{L, 2, P, K, h}));
    EDGEVLA_RETURN_IF_ERROR(backbone.bind("kv", kv_host));
  }
  EDGEVLA_RETURN_IF_ERROR(backbone.run({}));
  out.backbone_ms = backbone.last_timings().total_ms;
  out.parts = backbone.last_timings().parts;

  head.clear_bindings();
  EDGEVLA_ASSIGN_OR_RETURN(Tensor kv, backbone.output("kv"));
  EDGEVLA_RETURN_IF_ERROR(head.bind("kv", kv));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor mask, backbone.output("mask"));
  EDGEVLA_RETURN_IF_ERROR(head.bind("mask", mask));
  if (in.state.defined()) EDGEVLA_RETURN_IF_ERROR(head.bind("state", in.state));
  EDGEVLA_RETURN_IF_ERROR(head.bind("noise", in.noise));
  if (diagnostics) {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor vel, zeros(DType::kF32, Shape{in.num_steps, c.action_horizon, c.action_dim}));
    EDGEVLA_RETURN_IF_ERROR(head.bind("velocities", vel));
  }
  backends::RunOptions ro;
  ro.num_steps = in.num_steps;
  EDGEVLA_RETURN_IF_ERROR(head.run(ro));
  out.action_head_ms = head.last_timings().total_ms;
  for (const auto& p : head.last_timings().parts) out.parts.push_back(p);
  EDGEVLA_ASSIGN_OR_RETURN(Tensor actions, head.output("actions"));
  EDGEVLA_ASSIGN_OR_RETURN(out.actions, actions.clone());
  if (!diagnostics) return out;

  EDGEVLA_ASSIGN_OR_RETURN(out.velocities, head.output("velocities"));
  // The full-length prefix mask in openpi's order, and the cache scattered onto it.
  EDGEVLA_ASSIGN_OR_RETURN(out.prefix_mask, zeros(DType::kU8, Shape{P}));
  auto* pm = out.prefix_mask.data<std::uint8_t>();
  for (std::int64_t s = 0; s < C; ++s) {
    const bool valid = in.images[static_cast<std::size_t>(s)].defined();
    for (std::int64_t i = 0; i < N; ++i) pm[s * N + i] = valid ? 1 : 0;
  }
  for (std::int64_t i = 0; i < T; ++i) pm[C * N + i] = in.token_mask.data<bool>()[i] ? 1 : 0;
  EDGEVLA_ASSIGN_OR_RETURN(out.prefix_k, zeros(DType::kF32, Shape{L, P, K, h}));
  EDGEVLA_ASSIGN_OR_RETURN(out.prefix_v, zeros(DType::kF32, Shape{L, P, K, h}));
  // kv is [L, 2, n, K, h] over the n valid tokens.
  const std::int64_t n = kv.shape()[2], row = K * h;
  const float* src = kv.data<float>();
  for (std::int64_t l = 0; l < L; ++l) {
    for (std::int64_t p = 0, r = 0; p < P; ++p) {
      if (!pm[p]) continue;
      if (r >= n) return internal_error("backbone produced fewer cache rows than valid tokens");
      std::memcpy(out.prefix_k.data<float>() + (l * P + p) * row, src + ((2 * l) * n + r) * row, row * sizeof(float));
      std::memcpy(out.prefix_v.data<float>() + (l * P + p) * row, src + ((2 * l + 1) * n + r) * row,
                  row * sizeof(float));
      ++r;
    }
  }
  return out;
}

Expected<ForwardInputs> random_inputs(const ModelConfig& c, std::uint64_t seed,
                                      const std::vector<int>& masked, int prompt_tokens) {
  ForwardInputs in;
  Rng rng(seed, 0);
  const std::int64_t S = c.vision.image_size, T = c.token_len();
  for (int s = 0; s < c.num_cameras(); ++s) {
    if (std::find(masked.begin(), masked.end(), s) != masked.end()) {
      in.images.emplace_back();
      continue;
    }
    EDGEVLA_ASSIGN_OR_RETURN(Tensor img, Tensor::empty(DType::kF32, Shape{3, S, S}));
    for (std::int64_t i = 0; i < img.numel(); ++i) img.data<float>()[i] = static_cast<float>(rng.uniform() * 2.0 - 1.0);
    in.images.push_back(std::move(img));
  }
  EDGEVLA_ASSIGN_OR_RETURN(in.tokens, zeros(DType::kI32, Shape{T}));
  EDGEVLA_ASSIGN_OR_RETURN(in.token_mask, zeros(DType::kBool, Shape{T}));
  const std::int64_t vocab = c.vlm.vocab_size;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(prompt_tokens, T); ++i) {
    in.tokens.data<std::int32_t>()[i] = i == 0 ? 2 : static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(vocab));
    in.token_mask.data<bool>()[i] = true;
  }
  EDGEVLA_ASSIGN_OR_RETURN(in.state, Tensor::empty(DType::kF32, Shape{c.action_dim}));
  for (std::int64_t i = 0; i < c.action_dim; ++i) in.state.data<float>()[i] = i < 8 ? static_cast<float>(rng.normal() * 0.5) : 0.0f;
  EDGEVLA_ASSIGN_OR_RETURN(in.noise, Tensor::empty(DType::kF32, Shape{c.action_horizon, c.action_dim}));
  for (std::int64_t i = 0; i < in.noise.numel(); ++i) in.noise.data<float>()[i] = static_cast<float>(rng.normal());
  in.num_steps = c.num_steps;
  return in;
}

Expected<ForwardInputs> read_io_inputs(const std::string& path, const ModelConfig& c) {
  EDGEVLA_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(path));
  auto get = [&](const char* name, DType dtype) -> Expected<Tensor> {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor t, f.tensor(name));
    if (t.dtype() != dtype) {
      return invalid_argument("'" + path + "': '" + name + "' must be " + std::string(dtype_name(dtype)));
    }
    return t.clone();  // own the bytes: the file may be rewritten with the outputs
  };
  ForwardInputs in;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor images, get("images", DType::kF32));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor image_mask, get("image_mask", DType::kU8));
  const std::int64_t C = c.num_cameras(), S = c.vision.image_size;
  if (!(images.shape() == Shape{C, 3, S, S}) || image_mask.numel() != C) {
    return invalid_argument("'" + path + "': images " + images.shape().to_string() + " / image_mask " +
                            image_mask.shape().to_string() + " do not fit the model's " + std::to_string(C) +
                            " cameras of " + std::to_string(S) + "x" + std::to_string(S));
  }
  for (std::int64_t s = 0; s < C; ++s) {
    if (image_mask.data<std::uint8_t>()[s] == 0) {
      in.images.emplace_back();
      continue;
    }
    EDGEVLA_ASSIGN_OR_RETURN(Tensor img, images.select(0, s));
    EDGEVLA_ASSIGN_OR_RETURN(Tensor own, img.clone());
    in.images.push_back(std::move(own));
  }
  EDGEVLA_ASSIGN_OR_RETURN(in.tokens, get("tokens", DType::kI32));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor tm, get("token_mask", DType::kU8));
  EDGEVLA_ASSIGN_OR_RETURN(in.token_mask, Tensor::empty(DType::kBool, tm.shape()));
  for (std::int64_t i = 0; i < tm.numel(); ++i) in.token_mask.data<bool>()[i] = tm.data<std::uint8_t>()[i] != 0;
  EDGEVLA_ASSIGN_OR_RETURN(in.state, get("state", DType::kF32));
  EDGEVLA_ASSIGN_OR_RETURN(in.noise, get("noise", DType::kF32));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor steps, get("num_steps", DType::kI32));
  in.num_steps = steps.data<std::int32_t>()[0];
  return in;
}

Status write_io_file(const std::string& path, const ModelConfig& c, const ForwardInputs& in,
                     const ForwardOutputs* out) {
  const std::int64_t C = c.num_cameras(), S = c.vision.image_size;
  std::vector<std::pair<std::string, Tensor>> tensors;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor images, zeros(DType::kF32, Shape{C, 3, S, S}));
  EDGEVLA_ASSIGN_OR_RETURN(Tensor image_mask, zeros(DType::kU8, Shape{C}));
  for (std::int64_t s = 0; s < C; ++s) {
    const Tensor& img = in.images[static_cast<std::size_t>(s)];
    if (!img.defined()) continue;
    std::memcpy(images.data<float>() + s * 3 * S * S, img.data<float>(), img.nbytes());
    image_mask.data<std::uint8_t>()[s] = 1;
  }
  EDGEVLA_ASSIGN_OR_RETURN(Tensor tm, zeros(DType::kU8, in.token_mask.shape()));
  for (std::int64_t i = 0; i < tm.numel(); ++i) tm.data<std::uint8_t>()[i] = in.token_mask.data<bool>()[i] ? 1 : 0;
  EDGEVLA_ASSIGN_OR_RETURN(Tensor steps, Tensor::empty(DType::kI32, Shape{1}));
  steps.data<std::int32_t>()[0] = in.num_steps;
  tensors = {{"images", images}, {"image_mask", image_mask}, {"tokens", in.tokens}, {"token_mask", tm},
             {"state", in.state}, {"noise", in.noise}, {"num_steps", steps}};
  if (out != nullptr) {
    for (auto& [name, t] : std::vector<std::pair<std::string, Tensor>>{
             {"actions", out->actions}, {"vision_embeddings", out->vision_embeddings},
             {"prefix_k", out->prefix_k}, {"prefix_v", out->prefix_v}, {"prefix_mask", out->prefix_mask},
             {"velocities", out->velocities}}) {
      if (t.defined()) tensors.emplace_back(name, t);
    }
  }
  std::vector<WriteEntry> entries;
  for (auto& [name, t] : tensors) {
    EDGEVLA_ASSIGN_OR_RETURN(t, t.contiguous());
    entries.push_back({name, t.dtype(), t.shape()});
  }
  return write_safetensors(path, entries, {}, [&](const WriteEntry& e, std::span<std::byte> bytes) {
    for (const auto& [name, t] : tensors) {
      if (name == e.name) {
        std::memcpy(bytes.data(), t.raw_data(), bytes.size());
        return Status::ok();
      }
    }
    return internal_error("no tensor for " + e.name);
  });
}

}  // namespace edgevla::model
