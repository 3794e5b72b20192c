// GR00T N1.6 configs and checkpoints: tiny (f32, 3 and 15 shards) and small (bf16) checkpoints
// from tests/reference/groot/make_checkpoint.py open with the sizes of their configs, the key
// list equals the reference generator's for tiny, small and full, the full-size key list comes
// to the published totals (notes/groot-n16.md §5, §8); corrupted checkpoints and configs of
// another family or version give errors naming the file, tensor or key and the fix.
#include "runtime/model/groot/checkpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using model::test::ScratchDir;

std::string reference_dir() { return edgevla::testing::source_dir() + "/tests/reference/groot"; }

class GrootCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("groot_checkpoint");
    const std::string log = *dir_ / "setup.log";
    const std::string py = model::test::kPython;
    const std::string gen = py + " " + reference_dir() + "/make_checkpoint.py ";
    for (const auto& [name, args] : std::map<std::string, std::string>{
             {"tiny", "--config tiny --dtype f32"},
             {"tiny15", "--config tiny --dtype f32 --max-shard-bytes 400000"},
             {"small", "--config small --dtype bf16"}}) {
      ASSERT_EQ(model::test::run_command(
                    gen + args + " --out " + model::test::shell_quote(*dir_ / name), log),
                0)
          << model::test::read_file(log);
    }
    // The reference generator's key list for each config.
    const std::string keys =
        "import json, sys; sys.path.insert(0, sys.argv[1]); import make_checkpoint, groot_configs; "
        "json.dump({n: [[k, list(s)] for k, s, _ in "
        "make_checkpoint.weight_specs(groot_configs.get(n))] "
        "for n in ('tiny', 'small', 'full')}, open(sys.argv[2], 'w'))";
    ASSERT_EQ(model::test::run_command(py + " -c " + model::test::shell_quote(keys) + " " +
                                           reference_dir() + " " +
                                           model::test::shell_quote(*dir_ / "keys.json"),
                                       log),
              0)
        << model::test::read_file(log);
    reference_keys_ = json::parse(model::test::read_file(*dir_ / "keys.json"));
  }
  static void TearDownTestSuite() { dir_.reset(); }

  // A copy of checkpoint `name` to break.
  static std::string copy_of(const std::string& name, const std::string& tag) {
    const std::string to = *dir_ / ("copy_" + tag);
    fs::remove_all(to);
    fs::copy(*dir_ / name, to, fs::copy_options::recursive);
    return to;
  }

  static std::unique_ptr<ScratchDir> dir_;
  static json reference_keys_;
};
std::unique_ptr<ScratchDir> GrootCheckpointTest::dir_;
json GrootCheckpointTest::reference_keys_;

// The full-size configs, written from notes/groot-n16.md §2, §3, §5 (not from the generator).
std::pair<std::string, std::string> full_config_texts() {
  json c = {{"model_type", "Gr00tN1d6"},
            {"model_name", "nvidia/Eagle-Block2A-2B-v2"},
            {"select_layer", 16},
            {"backbone_embedding_dim", 2048},
            {"hidden_size", 1024},
            {"input_embedding_dim", 1536},
            {"max_state_dim", 128},
            {"max_action_dim", 128},
            {"action_horizon", 50},
            {"max_num_embodiments", 32},
            {"max_seq_len", 1024},
            {"use_alternate_vl_dit", true},
            {"attend_text_every_n_blocks", 2},
            {"use_vlln", true},
            {"add_pos_embed", true},
            {"num_inference_timesteps", 4},
            {"num_timestep_buckets", 1000},
            {"shortest_image_edge", 256},
            {"crop_fraction", 0.95},
            {"diffusion_model_cfg",
             {{"num_layers", 32},
              {"num_attention_heads", 32},
              {"attention_head_dim", 48},
              {"output_dim", 1024},
              {"norm_type", "ada_norm"},
              {"interleave_self_attention", true}}}};
  json e = {{"image_token_index", 151669},
            {"downsample_ratio", 0.5},
            {"use_pixel_shuffle", true},
            {"vision_config",
             {{"hidden_size", 1152},
              {"num_hidden_layers", 27},
              {"num_attention_heads", 16},
              {"intermediate_size", 4304},
              {"patch_size", 14},
              {"num_patches", 256},
              {"num_channels", 3},
              {"layer_norm_eps", 1e-6}}},
            {"text_config",
             {{"hidden_size", 2048},
              {"num_hidden_layers", 28},
              {"num_attention_heads", 16},
              {"num_key_value_heads", 8},
              {"head_dim", 128},
              {"intermediate_size", 6144},
              {"vocab_size", 151680},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 1e6},
              {"tie_word_embeddings", true}}}};
  return {c.dump(), e.dump()};
}

// The vision tower's unused pooling head: keys and shapes (SigLIP's multi-head attention pooling).
std::vector<WeightSpec> pooling_head(const VisionConfig& v) {
  const std::string h = std::string(kVisionPrefix) + "head.";
  const std::int64_t d = v.hidden_size, i = v.intermediate_size;
  return {{h + "probe", Shape{1, 1, d}},
          {h + "attention.in_proj_weight", Shape{3 * d, d}},
          {h + "attention.in_proj_bias", Shape{3 * d}},
          {h + "attention.out_proj.weight", Shape{d, d}},
          {h + "attention.out_proj.bias", Shape{d}},
          {h + "layernorm.weight", Shape{d}},
          {h + "layernorm.bias", Shape{d}},
          {h + "mlp.fc1.weight", Shape{i, d}},
          {h + "mlp.fc1.bias", Shape{i}},
          {h + "mlp.fc2.weight", Shape{d, i}},
          {h + "mlp.fc2.bias", Shape{d}}};
}

std::map<std::string, std::string> key_shapes(const std::vector<WeightSpec>& specs) {
  std::map<std::string, std::string> m;
  for (const auto& w : specs) m[w.name] = w.shape.to_string();
  return m;
}

std::map<std::string, std::string> key_shapes(const json& list) {
  std::map<std::string, std::string> m;
  for (const auto& entry : list) {
    const auto dims = entry[1].get<std::vector<std::int64_t>>();
    m[entry[0].get<std::string>()] = Shape::from(dims)->to_string();
  }
  return m;
}

TEST_F(GrootCheckpointTest, FullSizeKeysMatchThePublishedTotals) {
  const auto [config, eagle] = full_config_texts();
  auto c = parse_config(config, "full config.json", eagle, "full Eagle config.json");
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  std::vector<WeightSpec> specs = expected_weights(*c);
  for (auto& w : pooling_head(c->vision)) specs.push_back(w);
  std::int64_t params = 0;
  std::map<std::string, int> parts;
  for (const auto& w : specs) {
    params += w.shape.numel();
    const std::string& n = w.name;
    const char* part = n.starts_with(kVisionPrefix)     ? "vision"
                       : n.starts_with(kLanguagePrefix) ? "language"
                       : n.starts_with(kMlp1Prefix)     ? "mlp1"
                       : n.starts_with(kDitPrefix)      ? "dit"
                                                        : "other";
    ++parts[part];
  }
  // notes/groot-n16.md §5 and §8: 1106 tensors, 6,573,217,664 bytes in bf16; keys per part.
  EXPECT_EQ(specs.size(), 1106u);
  EXPECT_EQ(params * 2, 6'573'217'664);
  EXPECT_EQ(parts["language"], 179);
  EXPECT_EQ(parts["vision"], 448);
  EXPECT_EQ(parts["mlp1"], 6);
  EXPECT_EQ(parts["dit"], 456);
  // And key by key what the reference generator writes.
  EXPECT_EQ(key_shapes(specs), key_shapes(reference_keys_["full"]));
  EXPECT_EQ(c->mlp1_in(), 4608);
  EXPECT_EQ(c->ff_dim(), 6144);
  EXPECT_EQ(c->vision.position_grid(), 16);
  EXPECT_EQ(c->vision.patch_dim(), 588);
}

TEST_F(GrootCheckpointTest, OpensTinyWithItsSizes) {
  auto ck = Checkpoint::open(*dir_ / "tiny");
  ASSERT_TRUE(ck.has_value()) << ck.status().to_string();
  const GrootConfig& c = ck->config();
  // groot_configs.py's tiny, as written by make_checkpoint.py.
  EXPECT_EQ(c.vision.hidden_size, 32);
  EXPECT_EQ(c.vision.num_layers, 2);
  EXPECT_EQ(c.vision.num_heads, 2);
  EXPECT_EQ(c.text.hidden_size, 64);
  EXPECT_EQ(c.text.num_layers, 3);
  EXPECT_EQ(c.text.num_kv_heads, 2);
  EXPECT_EQ(c.text.head_dim, 16);
  EXPECT_EQ(c.text.vocab_size, 1024);
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 1e6);
  EXPECT_EQ(c.select_layer, 2);
  EXPECT_EQ(c.unshuffle_factor, 2);
  EXPECT_EQ(c.image_token_id, 582);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.input_embedding_dim, 48);
  EXPECT_EQ(c.dit.num_layers, 4);
  EXPECT_EQ(c.dit.inner_dim(), 48);
  EXPECT_EQ(c.max_seq_len, 64);
  EXPECT_EQ(c.action_horizon, 50);
  EXPECT_EQ(c.max_state_dim, 128);
  EXPECT_EQ(c.num_inference_timesteps, 4);
  EXPECT_DOUBLE_EQ(c.crop_fraction, 0.95);
  EXPECT_TRUE(c.apply_sincos_state_encoding);
  EXPECT_TRUE(c.use_relative_action);
  EXPECT_EQ(c.eagle_dir, *dir_ / "tiny/Eagle-Block2A-2B-v2");
  EXPECT_EQ(ck->shards().size(), 3u);
  EXPECT_TRUE(ck->lm_head_tied());

  std::vector<WeightSpec> specs = expected_weights(c);
  for (auto& w : pooling_head(c.vision)) specs.push_back(w);
  EXPECT_EQ(key_shapes(specs), key_shapes(reference_keys_["tiny"]));
  std::uint64_t bytes = 0;
  for (const auto& w : expected_weights(c)) {
    auto t = ck->weight(w.name);
    ASSERT_TRUE(t.has_value()) << w.name;
    EXPECT_EQ(t->shape(), w.shape) << w.name;
    EXPECT_EQ(t->dtype(), DType::kF32) << w.name;
    if (w.required) bytes += t->nbytes();
  }
  EXPECT_EQ(ck->weight_bytes(), bytes);
  EXPECT_FALSE(ck->weight("action_head.no_such.weight").has_value());
}

TEST_F(GrootCheckpointTest, ShardingDoesNotChangeTheWeights) {
  auto three = Checkpoint::open(*dir_ / "tiny");
  auto fifteen = Checkpoint::open(*dir_ / "tiny15");
  ASSERT_TRUE(three.has_value()) << three.status().to_string();
  ASSERT_TRUE(fifteen.has_value()) << fifteen.status().to_string();
  EXPECT_EQ(fifteen->shards().size(), 15u);
  for (const auto& w : expected_weights(three->config())) {
    auto a = three->weight(w.name);
    auto b = fifteen->weight(w.name);
    ASSERT_TRUE(a.has_value() && b.has_value()) << w.name;
    ASSERT_EQ(a->nbytes(), b->nbytes());
    EXPECT_EQ(std::memcmp(a->bytes().data(), b->bytes().data(), a->nbytes()), 0) << w.name;
  }
}

TEST_F(GrootCheckpointTest, OpensSmallInBf16) {
  auto ck = Checkpoint::open(*dir_ / "small");
  ASSERT_TRUE(ck.has_value()) << ck.status().to_string();
  const GrootConfig& c = ck->config();
  EXPECT_EQ(c.text.hidden_size, 256);
  EXPECT_EQ(c.select_layer, 4);
  EXPECT_EQ(c.dit.num_layers, 8);
  std::vector<WeightSpec> specs = expected_weights(c);
  for (auto& w : pooling_head(c.vision)) specs.push_back(w);
  EXPECT_EQ(key_shapes(specs), key_shapes(reference_keys_["small"]));
  auto w = ck->weight("action_head.model.transformer_blocks.2.attn1.to_k.weight");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->dtype(), DType::kBF16);
  EXPECT_EQ(w->shape(), (Shape{256, 256}));
  // Odd blocks self-attend: their K reads the DiT width, not the backbone's.
  EXPECT_EQ(ck->weight("action_head.model.transformer_blocks.3.attn1.to_k.weight")->shape(),
            (Shape{256, 256}));
  EXPECT_EQ(ck->weight("action_head.state_encoder.layer1.W")->shape(), (Shape{32, 128, 256}));
  EXPECT_TRUE(ck->lm_head_tied());
}

// --- broken checkpoints and configs
// --------------------------------------------------------------------

// Opening `dir` fails with `code` and a message holding each of `parts`.
void expect_error(const std::string& dir, StatusCode code, const std::vector<std::string>& parts) {
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.has_value()) << dir;
  EXPECT_EQ(ck.status().code(), code) << ck.status().to_string();
  for (const auto& p : parts)
    EXPECT_NE(ck.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << ck.status().message();
}

// Rewrites shard `file` of `dir` through `edit` (entries in, entries out; data copied by name,
// zeros for `zeroed` names, names the original lacks and tensors whose size changed).
void rewrite_shard(const std::string& dir, const std::string& file,
                   const std::function<void(std::vector<WriteEntry>&)>& edit,
                   const std::set<std::string>& zeroed = {}) {
  const std::string path = dir + "/" + file;
  const std::string tmp = path + ".orig";
  fs::rename(path, tmp);
  auto original = SafetensorsFile::open(tmp);
  ASSERT_TRUE(original.has_value()) << original.status().to_string();
  std::vector<WriteEntry> entries;
  for (const auto& e : original->entries()) entries.push_back({e.name, e.dtype, e.shape});
  edit(entries);
  const FillFn fill = [&](const WriteEntry& e, std::span<std::byte> out) -> Status {
    std::fill(out.begin(), out.end(), std::byte{0});
    auto t = original->tensor(e.name);
    if (t && t->nbytes() == out.size() && !zeroed.contains(e.name))
      std::memcpy(out.data(), t->bytes().data(), out.size());
    return Status::ok();
  };
  ASSERT_TRUE(write_safetensors(path, entries, {}, fill).is_ok());
  fs::remove(tmp);
}

// The file holding `name` according to the index.
std::string shard_of(const std::string& dir, const std::string& name) {
  return json::parse(
             model::test::read_file(dir + "/model.safetensors.index.json"))["weight_map"][name]
      .get<std::string>();
}

TEST_F(GrootCheckpointTest, MisshapedTensorIsNamed) {
  const std::string d = copy_of("tiny", "misshaped");
  const std::string name = "action_head.vlln.weight";
  rewrite_shard(d, shard_of(d, name), [&](std::vector<WriteEntry>& entries) {
    for (auto& e : entries) {
      if (e.name == name) e.shape = Shape{63};
    }
  });
  expect_error(d, StatusCode::kInvalidArgument,
               {name + " is [63], expected [64]", "1 misshaped", d});
}

TEST_F(GrootCheckpointTest, MissingTensorIsNamed) {
  const std::string d = copy_of("tiny", "missing");
  const std::string name = "backbone.model.language_model.model.layers.1.self_attn.k_norm.weight";
  const std::string file = shard_of(d, name);
  rewrite_shard(d, file, [&](std::vector<WriteEntry>& entries) {
    std::erase_if(entries, [&](const WriteEntry& e) { return e.name == name; });
  });
  expect_error(d, StatusCode::kInvalidArgument,
               {"missing " + name + " (expected [16])", name + " is mapped to " + file});
}

TEST_F(GrootCheckpointTest, UnexpectedTensorIsNamed) {
  const std::string d = copy_of("tiny", "extra");
  const std::string file = shard_of(d, "action_head.vlln.weight");
  rewrite_shard(d, file, [&](std::vector<WriteEntry>& entries) {
    entries.push_back(
        {"action_head.model.transformer_blocks.4.attn1.to_q.weight", DType::kF32, Shape{48, 48}});
  });
  // Not in the index either: both are reported.
  expect_error(
      d, StatusCode::kInvalidArgument,
      {"transformer_blocks.4.attn1.to_q.weight is in " + file + " but the index does not list it"});
  json index = json::parse(model::test::read_file(d + "/model.safetensors.index.json"));
  index["weight_map"]["action_head.model.transformer_blocks.4.attn1.to_q.weight"] = file;
  index["metadata"]["total_size"] =
      index["metadata"]["total_size"].get<std::int64_t>() + 48 * 48 * 4;
  model::test::write_file(d + "/model.safetensors.index.json", index.dump());
  expect_error(d, StatusCode::kInvalidArgument,
               {"unexpected action_head.model.transformer_blocks.4.attn1.to_q.weight [48,48]",
                "1 unexpected"});
}

TEST_F(GrootCheckpointTest, MissingOrTruncatedShard) {
  const std::string d = copy_of("tiny", "no_shard");
  fs::remove(d + "/model-00002-of-00003.safetensors");
  expect_error(
      d, StatusCode::kNotFound,
      {d + "/model-00002-of-00003.safetensors", "model.safetensors.index.json", "missing"});

  const std::string t = copy_of("tiny", "truncated_shard");
  const std::string shard = t + "/model-00003-of-00003.safetensors";
  fs::resize_file(shard, fs::file_size(shard) / 2);
  auto ck = Checkpoint::open(t);
  ASSERT_FALSE(ck.has_value());
  EXPECT_NE(ck.status().message().find(shard), std::string::npos) << ck.status().message();
}

TEST_F(GrootCheckpointTest, BrokenIndex) {
  const std::string d = copy_of("tiny", "truncated_index");
  const std::string index = model::test::read_file(d + "/model.safetensors.index.json");
  model::test::write_file(d + "/model.safetensors.index.json", index.substr(0, index.size() / 3));
  expect_error(d, StatusCode::kDataLoss, {d + "/model.safetensors.index.json", "truncated"});

  const std::string s = copy_of("tiny", "total_size");
  json j = json::parse(index);
  j["metadata"]["total_size"] = j["metadata"]["total_size"].get<std::int64_t>() + 2;
  model::test::write_file(s + "/model.safetensors.index.json", j.dump());
  expect_error(s, StatusCode::kInvalidArgument, {"total_size"});

  const std::string n = copy_of("tiny", "no_weights");
  for (const auto& f : fs::directory_iterator(n)) {
    if (f.path().extension() == ".safetensors" ||
        f.path().filename() == "model.safetensors.index.json")
      fs::remove(f.path());
  }
  expect_error(n, StatusCode::kNotFound,
               {"model.safetensors.index.json", "model.safetensors", "GR00T-N1.6-3B"});
}

TEST_F(GrootCheckpointTest, ConfigOfAnotherFamilyOrVersion) {
  const std::string d = copy_of("tiny", "n15");
  json c = json::parse(model::test::read_file(d + "/config.json"));
  c["model_type"] = "gr00t_n1_5";
  model::test::write_file(d + "/config.json", c.dump());
  expect_error(d, StatusCode::kInvalidArgument, {"N1.5", "gr00t_n1_5", d + "/config.json"});

  const std::string p = copy_of("tiny", "pi0");
  model::test::write_file(p + "/config.json",
                          R"({"action_dim": 32, "paligemma_variant": "gemma_2b"})");
  expect_error(p, StatusCode::kInvalidArgument, {"pi0", "family pi0"});

  expect_error(*dir_ / "absent", StatusCode::kNotFound, {*dir_ / "absent", "make_checkpoint.py"});
}

// A number no double holds (1e400) in a checkpoint's JSON files is an error naming the file,
// not an uncaught exception (the fuzzers found the same in other decoders).
TEST_F(GrootCheckpointTest, NumbersTooLargeAreAnErrorNotACrash) {
  const std::string d = copy_of("tiny", "huge_config");
  std::string text = model::test::read_file(d + "/config.json");
  text.insert(text.find('{') + 1, "\"huge\": 1e400, ");
  model::test::write_file(d + "/config.json", text);
  expect_error(d, StatusCode::kDataLoss, {d + "/config.json"});

  const std::string i = copy_of("tiny", "huge_index");
  std::string index = model::test::read_file(i + "/model.safetensors.index.json");
  index.insert(index.find('{') + 1, "\"huge\": 1e400, ");
  model::test::write_file(i + "/model.safetensors.index.json", index);
  expect_error(i, StatusCode::kDataLoss, {i + "/model.safetensors.index.json"});
}

TEST_F(GrootCheckpointTest, BrokenConfigs) {
  // A size missing from config.json: named, never defaulted.
  std::string d = copy_of("tiny", "no_hidden");
  json c = json::parse(model::test::read_file(d + "/config.json"));
  c.erase("max_action_dim");
  model::test::write_file(d + "/config.json", c.dump());
  expect_error(d, StatusCode::kInvalidArgument,
               {d + "/config.json", "'max_action_dim' is missing"});

  // A size that breaks a rule.
  d = copy_of("tiny", "bad_dit");
  c = json::parse(model::test::read_file(d + "/config.json"));
  c["diffusion_model_cfg"]["num_attention_heads"] = 4;
  model::test::write_file(d + "/config.json", c.dump());
  expect_error(d, StatusCode::kInvalidArgument, {"input_embedding_dim 48", "= 64"});

  // A size the files disagree with: the tensors are named.
  d = copy_of("tiny", "wrong_size");
  c = json::parse(model::test::read_file(d + "/config.json"));
  c["max_state_dim"] = 64;
  model::test::write_file(d + "/config.json", c.dump());
  expect_error(d, StatusCode::kInvalidArgument,
               {"action_head.state_encoder.layer1.W is [32,128,32], expected [32,64,32]"});

  // The Eagle folder: missing, and a text_config without a size.
  d = copy_of("tiny", "no_eagle");
  fs::remove_all(d + "/Eagle-Block2A-2B-v2");
  expect_error(d, StatusCode::kNotFound,
               {d + "/Eagle-Block2A-2B-v2", "gr00t/model/modules/nvidia/Eagle-Block2A-2B-v2"});
  d = copy_of("tiny", "eagle_no_heads");
  json e = json::parse(model::test::read_file(d + "/Eagle-Block2A-2B-v2/config.json"));
  e["text_config"].erase("num_key_value_heads");
  model::test::write_file(d + "/Eagle-Block2A-2B-v2/config.json", e.dump());
  expect_error(
      d, StatusCode::kInvalidArgument,
      {"'text_config'", "'num_key_value_heads' is missing", "Eagle-Block2A-2B-v2/config.json"});

  // A switch the model is not written for.
  d = copy_of("tiny", "no_vlln");
  c = json::parse(model::test::read_file(d + "/config.json"));
  c["use_vlln"] = false;
  model::test::write_file(d + "/config.json", c.dump());
  expect_error(d, StatusCode::kInvalidArgument, {"'use_vlln' is false"});
}

TEST_F(GrootCheckpointTest, UntiedLmHeadIsReported) {
  const std::string d = copy_of("tiny", "untied");
  const std::string name(kLmHead);
  const std::string file = shard_of(d, name);
  // Same names and shapes; lm_head gets zeros.
  rewrite_shard(d, file, [](std::vector<WriteEntry>&) {}, {name});
  auto ck = Checkpoint::open(d);
  ASSERT_TRUE(ck.has_value()) << ck.status().to_string();
  EXPECT_FALSE(ck->lm_head_tied());
}

}  // namespace
}  // namespace edgevla::model::groot
