// Model configs, safetensors files, checkpoint validation and the seeded generator.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/model/pi0/checkpoint.hpp"
#include "runtime/model/pi0/config.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "runtime/model/safetensors.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::model {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("edgevla-ckpt-" + std::to_string(::getpid()) + "-" + tag);
  fs::remove_all(d);
  fs::create_directories(d);
  edgevla::testing::remove_at_exit(d.string());
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Config -------------------------------------------------------------------------------------

TEST(ModelConfig, OpenpiKeysGiveTheRealSizes) {
  auto c = parse_config(R"({"action_dim": 32, "action_horizon": 15, "paligemma_variant": "gemma_2b",
                           "action_expert_variant": "gemma_300m", "precision": "bfloat16"})", "config.json");
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->vlm.width, 2048);
  EXPECT_EQ(c->vlm.mlp_dim, 16384);
  EXPECT_EQ(c->vlm.vocab_size, 257152);
  EXPECT_EQ(c->expert.width, 1024);
  EXPECT_EQ(c->vision.width, 1152);
  EXPECT_EQ(c->vision.depth, 27);
  EXPECT_EQ(c->action_horizon, 15);
  EXPECT_FALSE(c->model_type_given);
  c->type = ModelType::kPi05;
  EXPECT_EQ(c->token_len(), 200);
  EXPECT_TRUE(c->state_in_prompt());
  EXPECT_EQ(c->prefix_len(), 3 * 256 + 200);
  c->type = ModelType::kPi0;
  EXPECT_EQ(c->token_len(), 48);
  EXPECT_EQ(c->suffix_len(), 16);
}

// The class of bug the safetensors fuzzer found (a number too large for a double makes the JSON
// parser throw out_of_range, not parse_error) in config.json: an error, not a crash.
TEST(ModelConfig, NumberTooLargeIsAnErrorNotACrash) {
  auto c = parse_config(R"({"action_horizon": 1e400})", "ck/config.json");
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("ck/config.json"), std::string::npos);
  EXPECT_NE(c.status().message().find("not valid JSON"), std::string::npos);
}

TEST(ModelConfig, UnknownKeysAndBadSizesAreNamed) {
  auto typo = parse_config(R"({"action_horizon": 10, "action_horzion": 5})", "ck/config.json");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.status().message().find("action_horzion"), std::string::npos);
  EXPECT_NE(typo.status().message().find("ck/config.json"), std::string::npos);

  auto custom = parse_config(R"({"paligemma_variant": "custom"})", "c.json");
  ASSERT_FALSE(custom);
  EXPECT_NE(custom.status().message().find("'vlm'"), std::string::npos);

  auto depth = parse_config(R"({"paligemma_variant": "custom", "action_expert_variant": "custom",
      "vlm": {"width": 64, "depth": 2, "mlp_dim": 128, "num_heads": 2, "num_kv_heads": 1, "head_dim": 16, "vocab_size": 100},
      "expert": {"width": 32, "depth": 3, "mlp_dim": 64, "num_heads": 2, "num_kv_heads": 1, "head_dim": 16}})", "c.json");
  ASSERT_FALSE(depth);
  EXPECT_NE(depth.status().message().find("depth"), std::string::npos);

  auto variant = parse_config(R"({"paligemma_variant": "gemma_7b"})", "c.json");
  ASSERT_FALSE(variant);
  EXPECT_NE(variant.status().message().find("gemma_7b"), std::string::npos);

  auto broken = parse_config("{\"action_dim\": 32,", "c.json");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.status().message().find("not valid JSON"), std::string::npos);
}

TEST(ModelConfig, PresetsRoundTripThroughJson) {
  for (const char* name : {"tiny", "small", "pi0", "pi05"}) {
    for (ModelType type : {ModelType::kPi0, ModelType::kPi05}) {
      auto c = preset_config(name, type);
      ASSERT_TRUE(c) << name;
      auto back = parse_config(config_to_json(*c), name);
      ASSERT_TRUE(back) << back.status().to_string();
      EXPECT_EQ(back->vision, c->vision) << name;
      EXPECT_EQ(back->vlm, c->vlm) << name;
      EXPECT_EQ(back->expert, c->expert) << name;
      EXPECT_EQ(back->type, c->type) << name;
      EXPECT_EQ(back->token_len(), c->token_len()) << name;
      EXPECT_EQ(back->action_horizon, c->action_horizon) << name;
    }
  }
  EXPECT_FALSE(preset_config("huge", ModelType::kPi05));
}

// Safetensors -----------------------------------------------------------------------------------

TEST(Safetensors, RoundTripsEveryDtypeThroughTheMapping) {
  const std::string dir = temp_dir("st");
  const std::string path = dir + "/a.safetensors";
  std::vector<WriteEntry> entries = {
      {"f32", DType::kF32, Shape{2, 3}}, {"bf16", DType::kBF16, Shape{5}}, {"f16", DType::kF16, Shape{1, 1, 3}},
      {"i32", DType::kI32, Shape{4}},    {"u8", DType::kU8, Shape{7}},     {"scalar", DType::kF64, Shape{}}};
  ASSERT_OK(write_safetensors(path, entries, {{"format", "pt"}}, [](const WriteEntry& e, std::span<std::byte> out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>((i * 7 + e.name.size()) & 0xff);
    return Status::ok();
  }));
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f) << f.status().to_string();
  EXPECT_EQ(f->entries().size(), entries.size());
  EXPECT_EQ(f->metadata().at("format"), "pt");
  for (const WriteEntry& e : entries) {
    auto t = f->tensor(e.name);
    ASSERT_TRUE(t) << e.name;
    EXPECT_EQ(t->dtype(), e.dtype);
    EXPECT_EQ(t->shape(), e.shape);
    EXPECT_EQ(t->buffer()->kind(), BufferKind::kMappedFile) << "weights must view the mapping";
    EXPECT_FALSE(t->buffer()->writable());
    const auto bytes = t->bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_EQ(bytes[i], static_cast<std::byte>((i * 7 + e.name.size()) & 0xff)) << e.name;
    }
    // Data offsets keep every tensor aligned to its element size.
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->raw_data()) % dtype_size(e.dtype), 0u);
  }
  EXPECT_FALSE(f->tensor("missing"));
}

TEST(Safetensors, DamagedFilesAreOneClearError) {
  const std::string dir = temp_dir("bad");
  const std::string path = dir + "/a.safetensors";
  ASSERT_OK(write_safetensors(path, {{"w", DType::kF32, Shape{64, 64}}}, {},
                              [](const WriteEntry&, std::span<std::byte>) { return Status::ok(); }));
  const std::string good = slurp(path);

  spit(path, good.substr(0, good.size() - 100));
  auto truncated = SafetensorsFile::open(path);
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("'w'"), std::string::npos);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);

  spit(path, good.substr(0, 5));
  EXPECT_FALSE(SafetensorsFile::open(path));

  std::string huge_header = good;
  huge_header[5] = '\x7f';
  spit(path, huge_header);
  auto hdr = SafetensorsFile::open(path);
  ASSERT_FALSE(hdr);
  EXPECT_NE(hdr.status().message().find("header"), std::string::npos);

  std::string bad_json = good;
  bad_json[8] = '[';
  spit(path, bad_json);
  EXPECT_FALSE(SafetensorsFile::open(path));

  std::string f8 = good;
  const auto at = f8.find("\"F32\"");
  ASSERT_NE(at, std::string::npos);
  f8.replace(at, 5, "\"F8_\"");  // same length: offsets stay valid
  spit(path, f8);
  auto dt = SafetensorsFile::open(path);
  ASSERT_FALSE(dt);
  EXPECT_NE(dt.status().message().find("F8_"), std::string::npos);

  EXPECT_EQ(SafetensorsFile::open(dir + "/nope.safetensors").status().code(), StatusCode::kNotFound);
}

// Found by tests/fuzz/safetensors_fuzzer (corpus/safetensors/crash-number-overflow): a number
// too large for a double in the header made the JSON parser throw out_of_range, which was not
// caught, and the process terminated.
TEST(Safetensors, HeaderNumberTooLargeIsAnErrorNotACrash) {
  const std::string dir = temp_dir("overflow");
  const std::string path = dir + "/a.safetensors";
  const std::string header = R"({"a":{"dtype":"U8","shape":[4E294967296],"data_offsets":[0,1]}})";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  spit(path, file + header + std::string(1, '\1'));
  auto f = SafetensorsFile::open(path);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find("JSON header"), std::string::npos);
}

// Checkpoints -----------------------------------------------------------------------------------

std::string make_tiny(const std::string& tag, ModelType type, DType dtype = DType::kF32, std::uint64_t seed = 1) {
  const std::string dir = temp_dir(tag);
  GenerateOptions o;
  o.config = *preset_config("tiny", type);
  o.seed = seed;
  o.dtype = dtype;
  EXPECT_OK(generate_checkpoint(o, dir));
  return dir;
}

TEST(Checkpoint, GeneratedFoldersOpenAndTellTheVariantFromTheWeights) {
  for (ModelType type : {ModelType::kPi0, ModelType::kPi05}) {
    const std::string dir = make_tiny(std::string("open") + std::string(model_type_name(type)), type);
    EXPECT_TRUE(fs::exists(dir + "/tokenizer.model"));
    EXPECT_TRUE(fs::exists(dir + "/assets/generated/norm_stats.json"));
    // Drop model_type from config.json: the weights alone must decide.
    auto c = load_config(dir + "/config.json");
    ASSERT_TRUE(c);
    std::string json = slurp(dir + "/config.json");
    const auto at = json.find("\"model_type\"");
    ASSERT_NE(at, std::string::npos);
    json.erase(at, json.find('\n', at) - at + 1);
    spit(dir + "/config.json", json);
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(ck) << ck.status().to_string();
    EXPECT_EQ(ck->config().type, type);
    EXPECT_GT(ck->weight_bytes(), 100000u);
    auto w = ck->weight("action_in_proj.weight");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->buffer()->kind(), BufferKind::kMappedFile);
  }
}

TEST(Checkpoint, TheOtherVariantIsRefusedWhenAStageExpectsOne) {
  const std::string dir = make_tiny("variant", ModelType::kPi0);
  OpenOptions o;
  o.expect_type = ModelType::kPi05;
  auto ck = Checkpoint::open(dir, o);
  ASSERT_FALSE(ck);
  EXPECT_NE(ck.status().message().find("pi0 model"), std::string::npos) << ck.status().message();
  EXPECT_NE(ck.status().message().find("pi05"), std::string::npos);

  // A config.json that contradicts the weights.
  std::string json = slurp(dir + "/config.json");
  const auto at = json.find("\"pi0\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 5, "\"pi05\"");
  spit(dir + "/config.json", json);
  auto bad = Checkpoint::open(dir);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("config.json says model_type pi05"), std::string::npos);
}

// Rewrites a checkpoint's weights through `edit` (which may rename, reshape, drop or add).
void rewrite(const std::string& dir, const std::function<void(std::vector<WriteEntry>&)>& edit) {
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  ASSERT_TRUE(f);
  std::vector<WriteEntry> entries;
  for (const auto& e : f->entries()) entries.push_back({e.name, e.dtype, e.shape});
  edit(entries);
  ASSERT_OK(write_safetensors(dir + "/model.safetensors.new", entries, {},
                              [](const WriteEntry&, std::span<std::byte>) { return Status::ok(); }));
  fs::rename(dir + "/model.safetensors.new", dir + "/model.safetensors");
}

TEST(Checkpoint, MissingExtraAndMisshapedTensorsAreNamedWithShapes) {
  const std::string missing = make_tiny("missing", ModelType::kPi05);
  const std::string q = std::string(kVlmPrefix) + "layers.1.self_attn.q_proj.weight";
  rewrite(missing, [&](std::vector<WriteEntry>& e) {
    std::erase_if(e, [&](const WriteEntry& w) { return w.name == q; });
  });
  auto m = Checkpoint::open(missing);
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("missing " + q + " (expected [32,64])"), std::string::npos) << m.status().message();

  const std::string shaped = make_tiny("shaped", ModelType::kPi05);
  rewrite(shaped, [&](std::vector<WriteEntry>& e) {
    for (auto& w : e) {
      if (w.name == "action_out_proj.weight") w.shape = Shape{7, 32};
    }
  });
  auto s = Checkpoint::open(shaped);
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("action_out_proj.weight is [7,32], expected [32,32]"), std::string::npos)
      << s.status().message();

  const std::string extra = make_tiny("extra", ModelType::kPi05);
  rewrite(extra, [&](std::vector<WriteEntry>& e) { e.push_back({"lora.A", DType::kF32, Shape{4, 4}}); });
  auto x = Checkpoint::open(extra);
  ASSERT_FALSE(x);
  EXPECT_NE(x.status().message().find("unexpected lora.A [4,4]"), std::string::npos) << x.status().message();

  const std::string dtype = make_tiny("dtype", ModelType::kPi05);
  rewrite(dtype, [&](std::vector<WriteEntry>& e) {
    for (auto& w : e) {
      if (w.name == "time_mlp_in.bias") w.dtype = DType::kI32;
    }
  });
  auto d = Checkpoint::open(dtype);
  ASSERT_FALSE(d);
  EXPECT_NE(d.status().message().find("time_mlp_in.bias is i32"), std::string::npos) << d.status().message();

  // Unused tensors openpi saves may be absent; the embedding may use its other name.
  const std::string lean = make_tiny("lean", ModelType::kPi05);
  rewrite(lean, [&](std::vector<WriteEntry>& e) {
    std::erase_if(e, [&](const WriteEntry& w) { return w.name == kExpertLmHead; });
    for (auto& w : e) {
      if (w.name == kEmbedding) w.name = std::string(kEmbeddingAlias);
    }
  });
  auto l = Checkpoint::open(lean);
  ASSERT_TRUE(l) << l.status().to_string();
  EXPECT_TRUE(l->weight(kEmbedding));
}

TEST(Checkpoint, RealSizesLoadFromAHeaderOnlyFile) {
  // Full-size pi0 / pi0.5 key sets and shapes, as a sparse file (no data written or read).
  for (ModelType type : {ModelType::kPi0, ModelType::kPi05}) {
    const std::string dir = temp_dir(std::string("real") + std::string(model_type_name(type)));
    GenerateOptions o;
    o.config = *preset_config(type == ModelType::kPi0 ? "pi0" : "pi05", type);
    o.dtype = DType::kBF16;
    o.sparse = true;
    ASSERT_OK(generate_checkpoint(o, dir));
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(ck) << ck.status().to_string();
    EXPECT_EQ(ck->config().type, type);
    // Tensor counts of openpi's PyTorch checkpoints (docs/model.md §3.2).
    EXPECT_EQ(ck->file().entries().size(), type == ModelType::kPi0 ? 777u : 812u);
    EXPECT_EQ(ck->file().find(kEmbedding)->shape, (Shape{257152, 2048}));
    EXPECT_EQ(ck->file().find(std::string(kVisionPrefix) + "encoder.layers.26.mlp.fc1.weight")->shape, (Shape{4304, 1152}));
    // Parameters the model reads: about 3.3 B (pi0) / 3.4 B (pi0.5) in bf16.
    const double params = static_cast<double>(ck->weight_bytes()) / 2;
    EXPECT_GT(params, 3.2e9);
    EXPECT_LT(params, 3.5e9);
    fs::remove_all(dir);
  }
}

TEST(Generator, SameSeedSameBytesOtherSeedOtherBytes) {
  const std::string a = make_tiny("seed-a", ModelType::kPi05, DType::kF32, 5);
  const std::string b = make_tiny("seed-b", ModelType::kPi05, DType::kF32, 5);
  const std::string c = make_tiny("seed-c", ModelType::kPi05, DType::kF32, 6);
  EXPECT_EQ(slurp(a + "/model.safetensors"), slurp(b + "/model.safetensors"));
  EXPECT_EQ(slurp(a + "/tokenizer.model"), slurp(b + "/tokenizer.model"));
  EXPECT_EQ(slurp(a + "/assets/generated/norm_stats.json"), slurp(b + "/assets/generated/norm_stats.json"));
  EXPECT_NE(slurp(a + "/model.safetensors"), slurp(c + "/model.safetensors"));
}

TEST(Generator, ReducedPrecisionFilesHoldEveryTensorInThatDtype) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::string dir = make_tiny(std::string("dt") + std::string(dtype_name(dtype)), ModelType::kPi0, dtype);
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(ck) << ck.status().to_string();
    for (const auto& e : ck->file().entries()) ASSERT_EQ(e.dtype, dtype) << e.name;
    EXPECT_EQ(ck->config().precision, dtype == DType::kBF16 ? "bfloat16" : "float16");
  }
}

}  // namespace
}  // namespace edgevla::model
