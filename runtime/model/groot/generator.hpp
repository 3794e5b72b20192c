// Seeded GR00T N1.6 checkpoints in the published layout (notes/groot-n16.md §5, §8), for tests,
// benchmarks and the demo: model-0000k-of-0000n.safetensors sharded in state-dict order (a new
// shard when the next tensor would pass the shard limit, as Hugging Face splits),
// model.safetensors.index.json, config.json, processor_config.json, statistics.json,
// embodiment_id.json, and the Eagle folder (<out>/Eagle-Block2A-2B-v2/: the backbone config,
// a small byte-level BPE tokenizer in Qwen's file formats, the Eagle processor files). The
// same layout tests/reference/groot/make_checkpoint.py writes; the values come from edgevla's
// generator (linear weights N(0, 1/fan_in), biases N(0, 0.02²), norm scales 1 + N(0, 0.05²),
// embeddings N(0, 1); lm_head equals embed_tokens).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/dtype.hpp"
#include "runtime/model/groot/config.hpp"

namespace edgevla {
class Progress;
}

namespace edgevla::model::groot {

// A size preset: the model config and what only a generated checkpoint needs.
struct Preset {
  std::string name;
  GrootConfig config;
  int max_position_embeddings = 0;  // Qwen3's (written to the Eagle config)
  int bpe_merges = 0;               // merges of the generated tokenizer
  std::int64_t max_shard_bytes = 0;
};

// tiny, small (the reference's test sizes) or full (the published 3B model).
Expected<Preset> preset(std::string_view name);

struct GenerateOptions {
  std::string preset = "tiny";
  std::uint64_t seed = 0;
  DType dtype = DType::kBF16;     // f32, bf16 or f16 for every tensor
  std::int64_t max_shard_bytes = 0;  // 0: the preset's
  // Told the weights' total and advanced as every shard is written (`edgevla model init`).
  Progress* progress = nullptr;
};

// What a checkpoint holds, before it is written.
struct CheckpointPlan {
  struct Shard {
    std::string file;
    std::vector<std::string> tensors;
    std::int64_t bytes = 0;
  };
  std::int64_t tensors = 0;
  std::int64_t params = 0;
  std::int64_t total_bytes = 0;
  std::map<std::string, int> keys_per_part;  // vision, language, mlp1, dit, action_head_other
  std::vector<Shard> shards;
};

Expected<CheckpointPlan> plan_checkpoint(const GenerateOptions& options);
// Writes the folder `out_dir` (created if needed). Same options, same bytes.
Status generate_checkpoint(const GenerateOptions& options, const std::string& out_dir);

}  // namespace edgevla::model::groot
