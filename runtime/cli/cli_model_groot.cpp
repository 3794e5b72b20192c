// `edgevla model info` for a GR00T N1.6 checkpoint: the towers' sizes, the stages with the bytes
// each loads, and every robot (embodiment) the checkpoint serves with its views, state and actions.
#include <cstdio>
#include <string>

#include "runtime/cli/cli_model.hpp"
#include "runtime/model/groot/groot_family.hpp"
#include "runtime/model/groot/processor.hpp"

namespace edgevla::cli {
namespace {

int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 2;
}

}  // namespace

int ModelCommands::info_groot() {
  auto ck = model::groot::Checkpoint::open(checkpoint_);
  if (!ck) return fail(ck.status());
  const model::groot::GrootModel m(std::move(*ck));
  const model::groot::GrootConfig& c = m.config();
  std::printf("checkpoint   %s\n", checkpoint_.c_str());
  std::printf("model        GR00T N1.6 (family groot), backbone %s\n", c.model_name.c_str());
  std::printf("vision       SigLIP2: width %d, depth %d, mlp %d, heads %d, patch %d; pixel unshuffle x%d\n",
              c.vision.hidden_size, c.vision.num_layers, c.vision.intermediate_size, c.vision.num_heads,
              c.vision.patch_size, c.unshuffle_factor);
  std::printf("llm          Qwen3: width %d, %d of %d layers kept, mlp %d, heads %d/%d x %d\n", c.text.hidden_size,
              c.select_layer, c.text.num_layers, c.text.intermediate_size, c.text.num_heads, c.text.num_kv_heads,
              c.text.head_dim);
  std::printf("action head  DiT: %d blocks, heads %d x %d, text every %d blocks; state %d, actions %d x %d, %d steps\n",
              c.dit.num_layers, c.dit.num_heads, c.dit.head_dim, c.attend_text_every_n_blocks, c.max_state_dim,
              c.action_horizon, c.max_action_dim, c.num_inference_timesteps);
  for (const model::StageSpec& s : m.stages()) {
    std::printf("stage        %-12s %.1f MB of weights\n", s.name.c_str(), static_cast<double>(s.weight_bytes) / 1e6);
  }
  auto processor = model::groot::load_processor_config(checkpoint_ + "/processor_config.json");
  if (!processor) return fail(processor.status());
  for (const std::string& tag : processor->tags()) {
    auto e = m.embodiment(tag);
    if (!e) {
      std::printf("robot        %s: %s\n", tag.c_str(), e.status().message().c_str());
      continue;
    }
    std::string views, state;
    for (const auto& v : e->views()) views += (views.empty() ? "" : ", ") + v;
    std::int64_t state_dim = 0;
    for (const auto& g : e->state_groups()) {
      state += (state.empty() ? "" : " ") + g.key + ":" + (g.dim > 0 ? std::to_string(g.dim) : std::string("any"));
      state_dim += g.dim;
    }
    std::printf("robot        %s (id %d): views %s; state %lld [%s]; actions %lld x %lld\n", tag.c_str(), e->id(),
                views.c_str(), static_cast<long long>(state_dim), state.c_str(), static_cast<long long>(e->horizon()),
                static_cast<long long>(e->action_dim()));
  }
  std::printf("tensors      %.1f MB of weights in %zu shard(s)\n", static_cast<double>(m.weight_bytes()) / 1e6,
              m.checkpoint().shards().size());
  return 0;
}

}  // namespace edgevla::cli
