// `edgevla infer` end to end: the binary on tiny generated checkpoints (pi0.5 and pi0), its
// chunk against the same pass assembled here from the library pieces (decode, resize with pad,
// norm stats, tokenizer, the action head's noise, run_forward, un-normalize), seeds and steps,
// and bad inputs: each exits 2 with a message naming the input.
#include <gtest/gtest.h>
#include <png.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nodes/camera/image_files.hpp"
#include "runtime/backends/backend.hpp"
#include "runtime/model/pi0/pi0_family.hpp"
#include "runtime/backends/forward_pi0.hpp"
#include "runtime/model/image_ops.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/pi0/tokenizer.hpp"
#include "runtime/util/rng.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model {
namespace {

namespace fs = std::filesystem;
using test::read_file;
using test::ScratchDir;
using test::shell_quote;
using Json = nlohmann::json;

constexpr const char* kPrompt = "pick up the red cube";
constexpr const char* kState =
    "0.25,-0.5,1.5,0,2,-1,0.125,3";  // 8 values: the generated robot's dims

// An 8-bit RGB PNG of a smooth pattern (any size: infer resizes with padding).
void write_png(const std::string& path, int w, int h, int phase) {
  std::vector<png_byte> rgb(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      png_byte* p = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
      p[0] = static_cast<png_byte>((x * 255) / w);
      p[1] = static_cast<png_byte>((y * 255) / h);
      p[2] = static_cast<png_byte>((x * y + phase) % 256);
    }
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < h; ++y) png_write_row(png, &rgb[static_cast<std::size_t>(y) * w * 3]);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

struct Result {
  int rc = -1;
  std::string out, err;
  Json json() const { return Json::parse(out); }
};

class InferTest : public ::testing::Test {
 protected:
  // One set of checkpoints and images per test process (ctest runs each test in its own).
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("infer");
    for (const char* type : {"pi05", "pi0"}) {
      const Result r = edgevla({"model", "init", "--config", "tiny", "--model", type, "--seed", "1",
                                "--out", ckpt(type)});
      ASSERT_EQ(r.rc, 0) << r.out << r.err;
    }
    write_png(path("base.png"), 64, 48, 0);
    write_png(path("wrist.png"), 20, 30, 7);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string path(const std::string& name) { return *dir_ / name; }
  static std::string ckpt(const std::string& type) { return path("ckpt_" + type); }

  // Runs the binary with `args`; stdout and stderr apart.
  static Result edgevla(const std::vector<std::string>& args) {
    static int runs = 0;
    const std::string base = path("run" + std::to_string(++runs));
    std::string command = shell_quote(testing::bin_dir() + "/edgevla");
    for (const std::string& a : args) command += " " + shell_quote(a);
    command += " >" + shell_quote(base + ".out") + " 2>" + shell_quote(base + ".err");
    const int status = std::system(command.c_str());
    Result r;
    r.rc = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(base + ".out");
    r.err = read_file(base + ".err");
    return r;
  }

  // `edgevla infer` on the pi0.5 checkpoint with the base image, the prompt and `state`, plus
  // `extra`.
  static Result infer(const std::vector<std::string>& extra, const std::string& state = kState) {
    std::vector<std::string> args = {
        "infer",    "--checkpoint", ckpt("pi05"),      "--image", "base=" + path("base.png"),
        "--prompt", kPrompt,        "--state=" + state};
    args.insert(args.end(), extra.begin(), extra.end());
    return edgevla(args);
  }

  static ScratchDir* dir_;
};
ScratchDir* InferTest::dir_ = nullptr;

std::vector<float> flat(const Json& rows) {
  std::vector<float> v;
  for (const Json& row : rows) {
    for (const Json& x : row) v.push_back(x.get<float>());
  }
  return v;
}

// A bad input: exit code 2 and a message naming each of `names`.
void expect_rejected(const Result& r, const std::vector<std::string>& names) {
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const std::string& n : names) {
    EXPECT_NE(r.err.find(n), std::string::npos) << "no '" << n << "' in: " << r.err;
  }
}

TEST_F(InferTest, ChunkIsHorizonByRobotDimsFiniteAndSeeded) {
  const Result a = infer({"--seed", "5"});
  ASSERT_EQ(a.rc, 0) << a.err;
  const Json j = a.json();
  EXPECT_EQ(j["model"], "pi05");
  EXPECT_EQ(j["seed"], 5);
  EXPECT_EQ(j["num_steps"], 10);
  EXPECT_EQ(j["prompt"], kPrompt);
  EXPECT_EQ(j["state"].size(), 8u);
  EXPECT_GT(j["tokens"].get<int>(), 0);
  ASSERT_EQ(j["actions"].size(), 10u);  // tiny: horizon 10, 8 robot dims, action_dim 32
  for (const Json& row : j["actions"]) {
    ASSERT_EQ(row.size(), 8u);
    for (const Json& x : row) EXPECT_TRUE(std::isfinite(x.get<double>()));
  }
  ASSERT_EQ(j["actions_normalized"].size(), 10u);
  EXPECT_EQ(j["actions_normalized"][0].size(), 32u);
  for (const char* t : {"backbone", "action_head", "total"}) {
    EXPECT_GE(j["timing_ms"][t].get<double>(), 0.0) << t;
  }

  const Result again = infer({"--seed", "5"});
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(again.json()["actions"], j["actions"]);
  const Result other = infer({"--seed", "6"});
  ASSERT_EQ(other.rc, 0) << other.err;
  EXPECT_NE(other.json()["actions"], j["actions"]);
}

TEST_F(InferTest, ModelInitThenInferWorksForEveryActionDim) {
  // A config.json with another action_dim: model init writes norm stats no wider than the
  // model (8 robot dims, fewer when action_dim is smaller), and infer takes that checkpoint.
  const Json base = Json::parse(read_file(ckpt("pi05") + "/config.json"));
  for (int a : {1, 4, 7, 8, 12}) {
    Json c = base;
    c["action_dim"] = a;
    const std::string cfg = path("cfg_a" + std::to_string(a) + ".json");
    {
      std::ofstream f(cfg);
      f << c.dump();
    }
    const std::string dir = path("ckpt_a" + std::to_string(a));
    const Result init = edgevla({"model", "init", "--config", cfg, "--seed", "2", "--out", dir});
    ASSERT_EQ(init.rc, 0) << "action_dim " << a << ": " << init.err;
    const auto stats = model::load_norm_stats(dir + "/assets/generated/norm_stats.json");
    ASSERT_TRUE(stats.has_value()) << stats.status().to_string();
    const std::size_t robot = static_cast<std::size_t>(std::min(8, a));
    EXPECT_EQ(stats->state.size(), robot) << "action_dim " << a;
    EXPECT_EQ(stats->actions.size(), robot) << "action_dim " << a;
    std::string state;
    for (std::size_t i = 0; i < robot; ++i) state += (i ? "," : "") + std::to_string(0.1 * static_cast<double>(i));
    const Result r = edgevla({"infer", "--checkpoint", dir, "--image", "base=" + path("base.png"), "--prompt",
                              kPrompt, "--state=" + state});
    ASSERT_EQ(r.rc, 0) << "action_dim " << a << ": " << r.err;
    const Json j = r.json();
    ASSERT_EQ(j["actions"].size(), 10u);
    EXPECT_EQ(j["actions"][0].size(), robot) << "action_dim " << a;
    EXPECT_EQ(j["actions_normalized"][0].size(), static_cast<std::size_t>(a));
  }
}

TEST_F(InferTest, StepsChangeTheChunk) {
  const Result dflt = infer({});
  const Result one = infer({"--steps", "1"});
  ASSERT_EQ(dflt.rc, 0) << dflt.err;
  ASSERT_EQ(one.rc, 0) << one.err;
  EXPECT_EQ(one.json()["num_steps"], 1);
  EXPECT_NE(one.json()["actions"], dflt.json()["actions"]);
}

TEST_F(InferTest, OutFileHoldsWhatStdoutPrints) {
  const std::string out = path("actions.json");
  const Result file = infer({"--out", out});
  const Result printed = infer({});
  ASSERT_EQ(file.rc, 0) << file.err;
  ASSERT_EQ(printed.rc, 0) << printed.err;
  const Json j = Json::parse(read_file(out));
  EXPECT_EQ(j["actions"], printed.json()["actions"]);
  EXPECT_NE(file.out.find(out), std::string::npos);  // the summary line names the file
}

// The chunk `edgevla infer` wrote against the same pass built here from the library, as the
// preprocess and action_head nodes build it: guards the glue (slot order, padding, state in the
// prompt, noise draw, un-normalization).
void expect_matches_library(const Json& j, const std::string& dir,
                            const std::vector<std::pair<std::string, std::string>>& slot_images,
                            const std::vector<double>& raw_state, std::uint64_t seed) {
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck) << ck.status().to_string();
  const ModelConfig c = ck->config();
  const auto A = static_cast<std::size_t>(c.action_dim),
             H = static_cast<std::size_t>(c.action_horizon);
  ForwardInputs in;
  in.images.resize(c.cameras.size());
  for (const auto& [slot, file] : slot_images) {
    const auto it = std::find(c.cameras.begin(), c.cameras.end(), slot);
    ASSERT_NE(it, c.cameras.end()) << slot;
    auto rgb = nodes::decode_image_file(file);
    ASSERT_TRUE(rgb) << rgb.status().to_string();
    auto hwc = Tensor::from_values(std::span<const std::uint8_t>(rgb->pixels),
                                   Shape{rgb->height, rgb->width, 3});
    ASSERT_TRUE(hwc);
    auto canvas = resize_with_pad(*hwc, c.vision.image_size, "rgb8");
    ASSERT_TRUE(canvas) << canvas.status().to_string();
    auto chw = to_model_input(*canvas);
    ASSERT_TRUE(chw);
    in.images[static_cast<std::size_t>(it - c.cameras.begin())] = std::move(*chw);
  }

  auto stats_path = find_norm_stats(dir, c.asset_id);
  ASSERT_TRUE(stats_path);
  auto stats = load_norm_stats(*stats_path);
  ASSERT_TRUE(stats);
  const NormKind kind = norm_kind_for(c.type);
  std::vector<double> normalized(raw_state.size());
  ASSERT_OK(normalize(raw_state, stats->state, kind, normalized));
  std::vector<float> state(A, 0.0f);
  for (std::size_t i = 0; i < normalized.size(); ++i) state[i] = static_cast<float>(normalized[i]);

  auto tok = Tokenizer::load(dir + "/tokenizer.model");
  ASSERT_TRUE(tok);
  std::optional<std::span<const double>> in_prompt;
  if (c.state_in_prompt()) in_prompt = std::span<const double>(normalized);
  auto tokens = tok->encode(kPrompt, in_prompt, c.token_len());
  ASSERT_TRUE(tokens);
  EXPECT_EQ(j["tokens"], tokens->length);
  const auto T = static_cast<std::int64_t>(tokens->tokens.size());
  std::vector<std::uint8_t> mask(tokens->mask.begin(), tokens->mask.end());

  std::vector<float> noise(H * A);
  Rng rng(seed, 0);
  rng.fill_normal(noise);

  auto tokens_t = Tensor::from_values(std::span<const std::int32_t>(tokens->tokens), Shape{T});
  auto mask_t = Tensor::empty(DType::kBool, Shape{T});
  auto state_t = Tensor::from_values(std::span<const float>(state), Shape{c.action_dim});
  auto noise_t =
      Tensor::from_values(std::span<const float>(noise), Shape{c.action_horizon, c.action_dim});
  ASSERT_TRUE(tokens_t && mask_t && state_t && noise_t);
  for (std::int64_t i = 0; i < T; ++i) {
    mask_t->data<bool>()[i] = mask[static_cast<std::size_t>(i)] != 0;
  }
  in.tokens = *tokens_t;
  in.token_mask = *mask_t;
  in.state = *state_t;
  in.noise = *noise_t;
  in.num_steps = c.num_steps;

  auto backend = backends::make_backend("cpu");
  ASSERT_TRUE(backend) << backend.status().to_string();
  backends::EngineOptions eo;
  eo.threads = 1;
  const model::pi0::Pi0Model pm(std::move(*ck));
  auto bb = (*backend)->create(pm, model::kBackbone, eo);
  auto head = (*backend)->create(pm, model::kActionHead, eo);
  ASSERT_TRUE(bb && head);
  auto out = run_forward(**bb, **head, c, in, /*diagnostics=*/false);
  ASSERT_TRUE(out) << out.status().to_string();

  const std::size_t D = stats->actions.size();
  const float* normalized_actions = out->actions.data<float>();
  std::vector<float> expected, row(A);
  for (std::size_t r = 0; r < H; ++r) {
    ASSERT_OK(unnormalize(std::span<const float>(normalized_actions + r * A, A), stats->actions,
                          kind, row));
    expected.insert(expected.end(), row.begin(), row.begin() + static_cast<std::ptrdiff_t>(D));
  }
  const std::vector<float> got = flat(j["actions"]), got_normalized = flat(j["actions_normalized"]);
  ASSERT_EQ(got.size(), H * D);
  ASSERT_EQ(got_normalized.size(), H * A);
  double max_abs = 0, max_abs_normalized = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(double(got[i]) - expected[i]));
  }
  for (std::size_t i = 0; i < got_normalized.size(); ++i) {
    max_abs_normalized =
        std::max(max_abs_normalized, std::fabs(double(got_normalized[i]) - normalized_actions[i]));
  }
  EXPECT_LE(max_abs, 1e-6);
  EXPECT_LE(max_abs_normalized, 1e-6);
}

TEST_F(InferTest, MatchesTheLibraryPipelinePi05) {
  // Two of three slots (right wrist masked), the wrist under its full slot name.
  const Result r =
      infer({"--image", "left_wrist_0_rgb=" + path("wrist.png"), "--seed", "11", "--threads", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_matches_library(
      r.json(), ckpt("pi05"),
      {{"base_0_rgb", path("base.png")}, {"left_wrist_0_rgb", path("wrist.png")}},
      {0.25, -0.5, 1.5, 0, 2, -1, 0.125, 3}, 11);
}

TEST_F(InferTest, MatchesTheLibraryPipelinePi0) {
  // pi0: z-score normalization, state not in the prompt; a short state (3 of 8 dims), one
  // camera in the last slot.
  const Result r =
      edgevla({"infer", "--checkpoint", ckpt("pi0"), "--image", "right_wrist=" + path("wrist.png"),
               "--prompt", kPrompt, "--state", "0.5,-0.25,1", "--seed", "3", "--threads", "1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.json()["model"], "pi0");
  expect_matches_library(r.json(), ckpt("pi0"), {{"right_wrist_0_rgb", path("wrist.png")}},
                         {0.5, -0.25, 1}, 3);
}

TEST_F(InferTest, BadInputsExitTwoNamingTheInput) {
  expect_rejected(infer({"--image", "wrist=" + path("wrist.png")}),
                  {"'wrist'", "base_0_rgb", "left_wrist"});
  expect_rejected(infer({"--image", "left_wrist=" + path("missing.png")}), {"missing.png"});
  test::write_file(path("corrupt.png"), "\x89PNG\r\n\x1a\n this is not a PNG");
  expect_rejected(infer({"--image", "left_wrist=" + path("corrupt.png")}), {"corrupt.png"});
  test::write_file(path("short.png"), read_file(path("base.png")).substr(0, 60));
  expect_rejected(infer({"--image", "left_wrist=" + path("short.png")}), {"short.png"});
  expect_rejected(infer({"--image", "left_wrist=" + path("")}), {"not a file"});
  expect_rejected(infer({"--image", "base=" + path("base.png")}), {"base_0_rgb", "twice"});
  expect_rejected(infer({}, "0.1,nan,0.2"), {"--state", "nan"});
  expect_rejected(infer({}, "0.1,inf"), {"--state", "inf"});
  expect_rejected(infer({}, "0.1,abc"), {"--state", "abc"});
  expect_rejected(infer({}, "0.1,,0.2"), {"--state", "empty"});
  expect_rejected(infer({}, "1,2,3,4,5,6,7,8,9"), {"--state", "9 values"});
  expect_rejected(infer({"--steps", "-1"}), {"--steps"});
  expect_rejected(infer({"--backend", "nonesuch"}), {"nonesuch"});
  expect_rejected(infer({"--precision", "bf16"}), {"backbone", "f32 only", "backend: cuda"});
  expect_rejected(infer({"--precision", "half"}), {"--precision", "auto, f32 or bf16"});
  expect_rejected(infer({"--out", path("no/such/folder/a.json")}), {"no/such/folder/a.json"});
  expect_rejected(
      edgevla({"infer", "--checkpoint", ckpt("pi05"), "--prompt", kPrompt, "--state", "0.1"}),
      {"--image"});
  expect_rejected(edgevla({"infer", "--checkpoint", ckpt("pi05"), "--image",
                           "base=" + path("base.png"), "--state", "0.1"}),
                  {"--prompt"});
  expect_rejected(edgevla({"infer", "--checkpoint", ckpt("pi05"), "--image",
                           "base=" + path("base.png"), "--prompt", "  \n ", "--state", "0.1"}),
                  {"--prompt"});
}

TEST_F(InferTest, LongPromptNeedsTruncate) {
  std::string prompt;
  for (int i = 0; i < 30; ++i) prompt += "pick up the red cube and ";
  const std::vector<std::string> args = {
      "infer",    "--checkpoint", ckpt("pi0"), "--image", "base=" + path("base.png"),
      "--prompt", prompt,         "--state",   "0.1"};
  expect_rejected(edgevla(args), {"--prompt", "48", "--truncate"});  // tiny: 48 tokens
  std::vector<std::string> truncated = args;
  truncated.push_back("--truncate");
  const Result r = edgevla(truncated);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.json()["tokens"], 48);
}

TEST_F(InferTest, MissingCheckpointFilesAreNamed) {
  const std::string no_tok = path("no_tokenizer"), no_stats = path("no_stats");
  for (const std::string& d : {no_tok, no_stats}) {
    fs::copy(ckpt("pi05"), d, fs::copy_options::recursive);
  }
  fs::remove(no_tok + "/tokenizer.model");
  fs::remove_all(no_stats + "/assets");
  const std::vector<std::string> rest = {
      "--image", "base=" + path("base.png"), "--prompt", kPrompt, "--state", "0.1"};
  auto with = [&](const std::string& dir) {
    std::vector<std::string> args = {"infer", "--checkpoint", dir};
    args.insert(args.end(), rest.begin(), rest.end());
    return edgevla(args);
  };
  expect_rejected(with(no_tok), {no_tok + "/tokenizer.model", "edgevla model init"});
  expect_rejected(with(no_stats), {"norm_stats.json", "edgevla model init"});
  expect_rejected(with(path("no_such_checkpoint")), {"no_such_checkpoint", "edgevla model init"});
}

}  // namespace
}  // namespace edgevla::model
