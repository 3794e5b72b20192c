#include "runtime/model/pi0/generator.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "runtime/model/pi0/checkpoint.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/model/pi0/tokenizer.hpp"
#include "runtime/util/rng.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::model {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// How a tensor is initialised: value = offset + stddev · N(0, 1). Scales keep activations of
// order one through every layer, so small models behave like trained ones numerically (no
// overflow, no collapse) and compare meaningfully against the reference.
struct Init {
  double offset = 0.0;
  double stddev = 0.02;
};

Init init_for(const WeightSpec& w) {
  const std::string& n = w.name;
  const bool bias = ends_with(n, ".bias");
  if (n.find("layer_norm") != std::string::npos || n.find("post_layernorm") != std::string::npos) {
    return bias ? Init{0.0, 0.02} : Init{1.0, 0.05};  // LayerNorm scales multiply directly
  }
  if (n.find("layernorm.dense") != std::string::npos || n.find("norm.dense") != std::string::npos) {
    // adaRMS modulation: small scale/shift/gate around zero.
    return bias ? Init{0.0, 0.02} : Init{0.0, 0.2 / std::sqrt(static_cast<double>(w.shape[1]))};
  }
  if (ends_with(n, "layernorm.weight") || ends_with(n, "norm.weight")) {
    return Init{0.0, 0.05};  // Gemma norms store the offset from 1
  }
  if (bias) return Init{0.0, 0.02};
  if (n == kEmbedding) return Init{0.0, 1.0 / std::sqrt(static_cast<double>(w.shape[1]))};
  if (n.find("position_embedding") != std::string::npos) return Init{0.0, 0.1};
  if (n == kExpertLmHead) return Init{0.0, 0.02};
  // Linear and conv weights: 1/sqrt(fan_in).
  const double fan_in = static_cast<double>(w.shape.numel() / w.shape[0]);
  return Init{0.0, 1.0 / std::sqrt(fan_in)};
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) return unavailable("cannot write '" + path + "'");
  return Status::ok();
}

NormStats generated_stats(std::uint64_t seed, int dim) {
  Rng rng(tensor_seed(seed, "norm_stats"), 0);
  auto make = [&](double spread) {
    Stats s;
    for (int i = 0; i < dim; ++i) {
      const double mean = 0.5 * rng.normal() * spread;
      const double std = (0.1 + 0.9 * rng.uniform()) * spread;
      s.mean.push_back(mean);
      s.std.push_back(std);
      s.q01.push_back(mean - 2.33 * std);
      s.q99.push_back(mean + 2.33 * std);
    }
    return s;
  };
  NormStats stats;
  stats.state = make(1.0);
  stats.actions = make(1.0);
  return stats;
}

}  // namespace

std::uint64_t tensor_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the name
  for (char c : name) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 1099511628211ull;
  }
  return seed * 0x9E3779B97F4A7C15ull ^ h;
}

Status generate_checkpoint(const GenerateOptions& options, const std::string& out_dir) {
  namespace fs = std::filesystem;
  if (options.dtype != DType::kF32 && options.dtype != DType::kBF16 && options.dtype != DType::kF16) {
    return invalid_argument("checkpoint dtype must be f32, bf16 or f16, got " +
                            std::string(dtype_name(options.dtype)));
  }
  ModelConfig config = options.config;
  EDGEVLA_RETURN_IF_ERROR(config.validate());
  config.precision = options.dtype == DType::kF32 ? "float32" : options.dtype == DType::kBF16 ? "bfloat16" : "float16";
  config.model_type_given = true;
  config.asset_id = "generated";
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return unavailable("cannot create '" + out_dir + "': " + ec.message());

  EDGEVLA_RETURN_IF_ERROR(write_text((fs::path(out_dir) / "config.json").string(), config_to_json(config)));

  std::vector<WeightSpec> specs = expected_weights(config);
  std::vector<WriteEntry> entries;
  std::map<std::string, const WeightSpec*> by_name;
  for (const WeightSpec& w : specs) {
    entries.push_back({w.name, options.dtype, w.shape});
    by_name[w.name] = &w;
  }
  std::sort(entries.begin(), entries.end(), [](const WriteEntry& a, const WriteEntry& b) { return a.name < b.name; });
  FillFn fill;
  if (!options.sparse) {
    fill = [&](const WriteEntry& e, std::span<std::byte> out) -> Status {
      const Init init = init_for(*by_name.at(e.name));
      const std::uint64_t seed = tensor_seed(options.seed, e.name);
      const std::int64_t n = e.shape.numel();
      // Element i draws counters 2i + 1 and 2i + 2 of the tensor's stream, so slices fill in
      // parallel with the same values as one pass (full-size checkpoints: seconds, not minutes).
      auto fill_range = [&](std::int64_t begin, std::int64_t end) {
        Rng rng(seed, static_cast<std::uint64_t>(2 * begin));
        for (std::int64_t i = begin; i < end; ++i) {
          const float v = static_cast<float>(init.offset + init.stddev * rng.normal());
          if (e.dtype == DType::kF32) {
            std::memcpy(out.data() + i * 4, &v, 4);
          } else {
            const std::uint16_t b = e.dtype == DType::kBF16 ? float_to_bfloat16(v) : float_to_half(v);
            std::memcpy(out.data() + i * 2, &b, 2);
          }
        }
      };
      constexpr std::int64_t kPerThread = std::int64_t{1} << 20;
      const std::int64_t workers = std::clamp<std::int64_t>(
          n / kPerThread, 1, std::max<std::int64_t>(1, std::thread::hardware_concurrency()));
      if (workers == 1) {
        fill_range(0, n);
        return Status::ok();
      }
      std::vector<std::thread> pool;
      const std::int64_t per = (n + workers - 1) / workers;
      for (std::int64_t w = 0; w < workers; ++w) {
        pool.emplace_back(fill_range, std::min(n, w * per), std::min(n, (w + 1) * per));
      }
      for (std::thread& t : pool) t.join();
      return Status::ok();
    };
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (options.progress != nullptr) {
    std::int64_t total = 0;
    for (const WriteEntry& e : entries) total += e.shape.numel() * static_cast<std::int64_t>(dtype_size(e.dtype));
    options.progress->set_total(total);
  }
  EDGEVLA_RETURN_IF_ERROR(write_safetensors((fs::path(out_dir) / "model.safetensors").string(), entries, metadata, fill,
                                            options.progress));

  const fs::path assets = fs::path(out_dir) / "assets" / config.asset_id;
  fs::create_directories(assets, ec);
  if (ec) return unavailable("cannot create '" + assets.string() + "': " + ec.message());
  // The robot's width never exceeds the model's action_dim (state and actions are padded up
  // to it): stats wider than the model would make the checkpoint unusable.
  const int robot_dim = options.robot_dim > 0 ? options.robot_dim : std::min(8, config.action_dim);
  if (robot_dim > config.action_dim) {
    return invalid_argument("robot_dim " + std::to_string(robot_dim) + " is wider than the model's action_dim " +
                            std::to_string(config.action_dim) + "; use at most " + std::to_string(config.action_dim));
  }
  EDGEVLA_RETURN_IF_ERROR(write_norm_stats(generated_stats(options.seed, robot_dim),
                                           (assets / "norm_stats.json").string()));
  // A small vocabulary is enough for the generated corpus; ids stay below the embedding rows.
  const int vocab = static_cast<int>(std::min<std::int64_t>(config.vlm.vocab_size, 1000));
  return train_tokenizer(generated_corpus(), vocab, (fs::path(out_dir) / "tokenizer.model").string());
}

}  // namespace edgevla::model
