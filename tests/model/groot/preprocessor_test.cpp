// GR00T's preprocess stage at the model layer (runtime/model/groot/preprocessor.hpp) against
// groot_numpy.py's `preprocess` (through preprocess_oracle.py) on a generated tiny checkpoint:
// pixel values of every view bit-identical, the same prompt ids, mask and padding, the same
// normalised state and embodiment id, for 1-, 2- and 3-view embodiments, letterbox on and off;
// and each bad input is one clear error.
#include "runtime/model/groot/preprocessor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "runtime/model/family.hpp"
#include "runtime/model/pi0/generator.hpp"
#include "tests/model/preprocess_test_util.hpp"

namespace edgevla::model::groot {
namespace {

using json = nlohmann::json;
using model::test::ScratchDir;

template <class T>
std::vector<T> read_raw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class GrootPreprocessor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("groot_pre");
    const std::string log = *dir_ / "setup.log";
    const std::string cmd = std::string(model::test::kPython) + " " + edgevla::testing::source_dir() +
                            "/tests/reference/groot/make_checkpoint.py --config tiny --dtype f32 --out " + ckpt();
    ASSERT_EQ(model::test::run_command(cmd, log), 0) << model::test::read_file(log);
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::string ckpt() { return *dir_ / "tiny"; }

  // The oracle's outputs for one case, in a fresh folder.
  static std::string oracle(const std::string& name, const std::string& tag, const std::string& size, int seed,
                            const std::string& letterbox, int pad_to, const std::string& instruction) {
    const std::string out = *dir_ / name;
    std::filesystem::create_directories(out);
    const std::string cmd = std::string(model::test::kPython) + " " + edgevla::testing::source_dir() +
                            "/tests/model/groot/preprocess_oracle.py " + ckpt() + " " + out + " " + tag + " " + size +
                            " " + std::to_string(seed) + " " + letterbox + " " + std::to_string(pad_to) + " '" +
                            instruction + "'";
    const std::string log = out + "/oracle.log";
    EXPECT_EQ(model::test::run_command(cmd, log), 0) << model::test::read_file(log);
    return out;
  }

  static std::unique_ptr<ScratchDir> dir_;
};

std::unique_ptr<ScratchDir> GrootPreprocessor::dir_;

// `pre` run with storage given for its images (as the preprocess node gives its publisher's
// loans): every image tensor is written into one of those buffers, one buffer an image, the
// bytes those of `want` (the run without); a buffer of the wrong shape is one clear error.
void ImagesGoIntoTheBuffersGiven(const model::Preprocessor& pre, model::PreprocessInput in,
                                 const model::PreprocessOutput& want) {
  std::vector<Tensor> given;
  in.image_buffer = [&](DType dtype, const Shape& shape) -> Expected<Tensor> {
    EDGEVLA_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(dtype, shape));
    std::memset(t.raw_data(), 0xff, t.nbytes());  // NaNs: a pixel left unwritten shows
    given.push_back(t);
    return t;
  };
  auto got = pre.run(in);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  ASSERT_EQ(got->tensors.size(), want.tensors.size());
  std::size_t images = 0;
  for (std::size_t i = 0; i < want.tensors.size(); ++i) {
    const auto& [name, t] = got->tensors[i];
    EXPECT_EQ(name, want.tensors[i].first);
    ASSERT_EQ(t.nbytes(), want.tensors[i].second.nbytes()) << name;
    EXPECT_EQ(std::memcmp(t.raw_data(), want.tensors[i].second.raw_data(), t.nbytes()), 0) << name;
    if (!name.starts_with("image.")) continue;
    ++images;
    EXPECT_TRUE(std::any_of(given.begin(), given.end(), [&](const Tensor& g) { return g.raw_data() == t.raw_data(); }))
        << name << " is not in a buffer the caller gave";
  }
  EXPECT_GT(images, 0u);
  EXPECT_EQ(given.size(), images);
  in.image_buffer = [](DType dtype, const Shape&) { return Tensor::empty(dtype, Shape{3, 2, 2}); };
  auto wrong = pre.run(in);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.status().message().find("image buffer"), std::string::npos) << wrong.status().message();
}

TEST_F(GrootPreprocessor, MatchesTheReferenceForEveryViewCountAndLetterbox) {
  struct Case {
    std::string tag, size, letterbox;
    int pad_to;
    std::string instruction;
  };
  const std::vector<Case> cases = {
      {"gr1", "480x640", "off", 0, "Pick the pear from the counter and place it in the plate."},
      {"libero_panda", "256x256", "on", 0, "Put the BOWL on the stove!"},
      {"oxe_droid", "360x640", "on", 600, "open the drawer, then wait"},
      {"new_embodiment", "300x200", "off", 0, "Fold the towel (twice)"},
  };
  int seed = 3;
  for (const Case& c : cases) {
    const std::string out = oracle(c.tag + "_" + c.letterbox, c.tag, c.size, seed, c.letterbox, c.pad_to, c.instruction);
    const json meta = json::parse(read_text(out + "/meta.json"));
    auto pre = Preprocessor::load(ckpt(), c.tag, c.letterbox == "on" ? Letterbox::kOn : Letterbox::kOff);
    ASSERT_TRUE(pre.has_value()) << pre.status().to_string();
    const auto x = c.size.find('x');
    const int h = std::stoi(c.size.substr(0, x)), w = std::stoi(c.size.substr(x + 1));
    std::vector<Frame> frames;
    for (std::size_t k = 0; k < pre->embodiment().views().size(); ++k) {
      const std::vector<std::uint8_t> bytes = read_raw<std::uint8_t>(out + "/frame." + std::to_string(k));
      frames.push_back(Frame{h, w, Pixels(bytes.begin(), bytes.end())});
    }
    RawState state;
    const json raw = json::parse(read_text(out + "/state.json"));
    for (const auto& [group, values] : raw.items()) {
      for (const auto& v : values) state[group].push_back(static_cast<float>(v.get<double>()));
    }
    auto in = pre->run(frames, c.instruction, state, c.pad_to > 0 ? std::optional<int>(c.pad_to) : std::nullopt);
    ASSERT_TRUE(in.has_value()) << c.tag << ": " << in.status().to_string();
    EXPECT_EQ(in->prompt, meta["prompt"].get<std::string>()) << c.tag;
    EXPECT_EQ(in->tokens_per_view, meta["tokens_per_view"].get<std::vector<int>>()) << c.tag;
    EXPECT_EQ(in->embodiment_id, meta["embodiment_id"].get<int>()) << c.tag;
    ASSERT_EQ(in->pixel_values.size(), frames.size());
    for (std::size_t k = 0; k < frames.size(); ++k) {
      const auto want = read_raw<float>(out + "/pixel_values." + std::to_string(k));
      ASSERT_EQ(in->pixel_values[k].size(), want.size()) << c.tag << " view " << k;
      EXPECT_EQ(std::memcmp(in->pixel_values[k].data(), want.data(), want.size() * sizeof(float)), 0)
          << c.tag << " view " << k << ": pixel values differ";
    }
    EXPECT_EQ(in->input_ids, read_raw<std::int32_t>(out + "/input_ids")) << c.tag;
    EXPECT_EQ(in->attention_mask, read_raw<std::uint8_t>(out + "/attention_mask")) << c.tag;
    const auto want_state = read_raw<float>(out + "/state");
    ASSERT_EQ(in->state.size(), want_state.size()) << c.tag;
    for (std::size_t i = 0; i < want_state.size(); ++i) EXPECT_NEAR(in->state[i], want_state[i], 1e-6) << c.tag << " " << i;
    if (c.pad_to > 0) {
      EXPECT_EQ(static_cast<int>(in->input_ids.size()), c.pad_to);
      EXPECT_EQ(in->attention_mask.front(), 0);
    }
    ++seed;
  }
}

TEST_F(GrootPreprocessor, BadInputsAreOneClearError) {
  auto pre = Preprocessor::load(ckpt(), "libero_panda");
  ASSERT_TRUE(pre.has_value()) << pre.status().to_string();
  const Frame f{64, 64, Pixels(64 * 64 * 3, 100)};
  RawState state;
  for (const auto& g : pre->embodiment().state_groups()) state[g.key].assign(static_cast<std::size_t>(std::max<std::int64_t>(g.dim, 1)), 0.0f);
  // One view for a two-view embodiment: names the views.
  auto one = pre->run(std::vector<Frame>{f}, "go", state);
  ASSERT_FALSE(one.has_value());
  EXPECT_NE(one.status().message().find("wrist_image"), std::string::npos) << one.status().message();
  // A prompt longer than the padding.
  auto longp = pre->run(std::vector<Frame>{f, f}, "go", state, 8);
  ASSERT_FALSE(longp.has_value());
  EXPECT_EQ(longp.status().code(), StatusCode::kOutOfRange);
  // A broken frame names its view.
  auto bad = pre->run(std::vector<Frame>{f, Frame{64, 64, {}}}, "go", state);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("wrist_image"), std::string::npos) << bad.status().message();
  // A missing state group.
  RawState missing = state;
  missing.erase(missing.begin());
  EXPECT_FALSE(pre->run(std::vector<Frame>{f, f}, "go", missing).has_value());
  // An unknown embodiment lists the known ones.
  auto unknown = Preprocessor::load(ckpt(), "no_such_robot");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.status().message().find("gr1"), std::string::npos) << unknown.status().message();
}

// The same stage behind the family seam (what the preprocess node will call): cameras by the
// embodiment's view names, tensors named as the stages' inputs, equal to the stage's own output.
TEST_F(GrootPreprocessor, TheFamilySeamGivesTheStageInputsByName) {
  auto family = model::find_family("auto", ckpt());
  ASSERT_TRUE(family.has_value()) << family.status().to_string();
  auto opened = (*family)->open(ckpt(), {});
  ASSERT_TRUE(opened.has_value()) << opened.status().to_string();
  auto seam = (*family)->make_preprocessor(ckpt(), {"libero_panda", 0});
  ASSERT_TRUE(seam.has_value()) << seam.status().to_string();
  EXPECT_EQ((*seam)->cameras(), (std::vector<std::string>{"image", "wrist_image"}));
  auto direct = Preprocessor::load(ckpt(), "libero_panda", Letterbox::kAuto);
  ASSERT_TRUE(direct.has_value());
  const Frame a{120, 160, Pixels(120 * 160 * 3, 0)}, b{96, 96, Pixels(96 * 96 * 3, 0)};
  Frame fa = a, fb = b;
  for (std::size_t i = 0; i < fa.rgb.size(); ++i) fa.rgb[i] = static_cast<std::uint8_t>(i * 7 % 251);
  for (std::size_t i = 0; i < fb.rgb.size(); ++i) fb.rgb[i] = static_cast<std::uint8_t>(i * 13 % 241);
  RawState state;
  for (const auto& g : direct->embodiment().state_groups()) {
    state[g.key].assign(static_cast<std::size_t>(std::max<std::int64_t>(g.dim, 1)), 0.25f);
  }
  model::PreprocessInput in;
  in.cameras = {{"wrist_image", fb.height, fb.width, fb.rgb}, {"image", fa.height, fa.width, fa.rgb}};  // any order
  in.prompt = "Stack the cups";
  for (const auto& [g, v] : state) in.state.emplace_back(g, std::vector<double>(v.begin(), v.end()));
  ASSERT_TRUE((*seam)->load().is_ok());
  auto got = (*seam)->run(in);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  auto want = direct->run(std::vector<Frame>{fa, fb}, "Stack the cups", state);
  ASSERT_TRUE(want.has_value());
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : got->tensors) by_name[name] = &t;
  for (const char* name : {"image.0", "image.1", "input_ids", "attention_mask", "state", "embodiment_id"}) {
    ASSERT_TRUE(by_name.count(name)) << name;
  }
  for (std::size_t k = 0; k < 2; ++k) {
    const Tensor& t = *by_name["image." + std::to_string(k)];
    ASSERT_EQ(static_cast<std::size_t>(t.numel()), want->pixel_values[k].size());
    EXPECT_EQ(std::memcmp(t.raw_data(), want->pixel_values[k].data(), want->pixel_values[k].size() * 4), 0) << k;
  }
  const Tensor& ids = *by_name["input_ids"];
  EXPECT_EQ(std::vector<std::int32_t>(ids.data<std::int32_t>(), ids.data<std::int32_t>() + ids.numel()), want->input_ids);
  EXPECT_EQ(by_name["embodiment_id"]->data<std::int32_t>()[0], want->embodiment_id);
  EXPECT_EQ(by_name["attention_mask"]->dtype(), DType::kBool);
  for (const auto& [g, v] : state) EXPECT_TRUE(by_name.count("raw_state." + g)) << g;
  ImagesGoIntoTheBuffersGiven(**seam, in, *got);
  // Resized on three threads: the same tensors, byte for byte; a negative count is refused.
  EXPECT_EQ((*seam)->threads(), 1);
  model::PreprocessorOptions threaded;
  threaded.embodiment = "libero_panda";
  threaded.threads = 3;
  auto seam3 = (*family)->make_preprocessor(ckpt(), threaded);
  ASSERT_TRUE(seam3.has_value()) << seam3.status().to_string();
  EXPECT_EQ((*seam3)->threads(), 3);
  auto got3 = (*seam3)->run(in);
  ASSERT_TRUE(got3.has_value()) << got3.status().to_string();
  ASSERT_EQ(got3->tensors.size(), got->tensors.size());
  for (std::size_t i = 0; i < got->tensors.size(); ++i) {
    const Tensor& x = got->tensors[i].second;
    const Tensor& y = got3->tensors[i].second;
    EXPECT_EQ(got3->tensors[i].first, got->tensors[i].first);
    ASSERT_EQ(x.nbytes(), y.nbytes()) << got->tensors[i].first;
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << got->tensors[i].first;
  }
  // 0 is the core-count pick, as for pi0.
  threaded.threads = 0;
  auto zero = (*family)->make_preprocessor(ckpt(), threaded);
  ASSERT_TRUE(zero.has_value()) << zero.status().to_string();
  EXPECT_EQ((*zero)->threads(), model::frame_threads(0));
  threaded.threads = -1;
  auto negative = (*family)->make_preprocessor(ckpt(), threaded);
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.status().message().find("threads"), std::string::npos) << negative.status().message();
  EXPECT_EQ(model::frame_threads(5), 5);
  EXPECT_GE(model::frame_threads(0), 1);
  EXPECT_LE(model::frame_threads(0), 4);
  // A missing camera names the view it needs.
  model::PreprocessInput one = in;
  one.cameras.pop_back();
  auto missing = (*seam)->run(one);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find("'image'"), std::string::npos) << missing.status().message();
  // A checkpoint with several embodiments needs one named; an unknown one lists the known ones.
  auto unnamed = (*family)->make_preprocessor(ckpt(), {});
  ASSERT_FALSE(unnamed.has_value());
  EXPECT_NE(unnamed.status().message().find("libero_panda"), std::string::npos) << unnamed.status().message();
}

// The options each family refuses name the fix; pi0's preprocessor is made without weights.
TEST_F(GrootPreprocessor, EachFamilyRefusesTheOptionsItDoesNotTake) {
  auto groot = model::find_family("auto", ckpt());
  ASSERT_TRUE(groot.has_value());
  model::PreprocessorOptions o;
  o.embodiment = "libero_panda";
  o.assets = {{"tokenizer", "/x/tokenizer.model"}};
  auto assets = (*groot)->make_preprocessor(ckpt(), o);
  ASSERT_FALSE(assets.has_value());
  EXPECT_NE(assets.status().message().find("remove them"), std::string::npos) << assets.status().message();
  o.assets.clear();
  o.long_prompt = model::LongPrompt::kTruncate;
  auto cut = (*groot)->make_preprocessor(ckpt(), o);
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.status().message().find("never cut"), std::string::npos) << cut.status().message();

  model::GenerateOptions g;
  g.config = *model::preset_config("tiny", model::ModelType::kPi05);
  const std::string dir = *dir_ / "pi05";
  ASSERT_TRUE(model::generate_checkpoint(g, dir).is_ok());
  std::filesystem::remove(std::filesystem::path(dir) / "model.safetensors");  // not needed to preprocess
  auto pi0 = model::find_family("auto", dir);
  ASSERT_TRUE(pi0.has_value()) << pi0.status().to_string();
  EXPECT_EQ((*pi0)->name(), "pi0");
  model::PreprocessorOptions p;
  p.cameras = {g.config.cameras.front()};
  p.threads = 4;  // pi0 resizes its cameras side by side: one camera, one thread
  auto made = (*pi0)->make_preprocessor(dir, p);
  ASSERT_TRUE(made.has_value()) << made.status().to_string();
  EXPECT_EQ((*made)->cameras(), p.cameras);
  EXPECT_EQ((*made)->threads(), 1);
  p.cameras.clear();
  auto all = (*pi0)->make_preprocessor(dir, p);
  ASSERT_TRUE(all.has_value()) << all.status().to_string();
  EXPECT_EQ((*all)->threads(), std::min<int>(4, static_cast<int>(g.config.cameras.size())));
  // Its cameras resized side by side give the same tensors as one after the other.
  p.threads = 1;
  auto serial = (*pi0)->make_preprocessor(dir, p);
  ASSERT_TRUE(serial.has_value()) << serial.status().to_string();
  ASSERT_TRUE((*all)->load().is_ok());
  ASSERT_TRUE((*serial)->load().is_ok());
  std::vector<std::vector<std::uint8_t>> pixels;
  model::PreprocessInput pin;
  for (std::size_t c = 0; c < g.config.cameras.size(); ++c) {
    const int h = 90 + 17 * static_cast<int>(c), w = 120 + 31 * static_cast<int>(c);
    pixels.emplace_back(static_cast<std::size_t>(h * w * 3));
    for (std::size_t i = 0; i < pixels.back().size(); ++i) pixels.back()[i] = static_cast<std::uint8_t>((i * (c + 3)) % 253);
    pin.cameras.push_back({g.config.cameras[c], h, w, pixels.back()});
  }
  pin.prompt = "fold the towel";
  pin.state = {{"state", std::vector<double>(static_cast<std::size_t>(std::min(4, g.config.action_dim)), 0.1)}};
  auto side = (*all)->run(pin);
  auto one = (*serial)->run(pin);
  ASSERT_TRUE(side.has_value()) << side.status().to_string();
  ASSERT_TRUE(one.has_value()) << one.status().to_string();
  ASSERT_EQ(side->tensors.size(), one->tensors.size());
  for (std::size_t i = 0; i < one->tensors.size(); ++i) {
    EXPECT_EQ(side->tensors[i].first, one->tensors[i].first);
    ASSERT_EQ(side->tensors[i].second.nbytes(), one->tensors[i].second.nbytes()) << one->tensors[i].first;
    EXPECT_EQ(std::memcmp(side->tensors[i].second.raw_data(), one->tensors[i].second.raw_data(),
                          one->tensors[i].second.nbytes()), 0) << one->tensors[i].first;
  }
  ImagesGoIntoTheBuffersGiven(**all, pin, *one);
  ImagesGoIntoTheBuffersGiven(**serial, pin, *one);
  p.threads = -2;
  auto negative = (*pi0)->make_preprocessor(dir, p);
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.status().message().find("threads"), std::string::npos) << negative.status().message();
  p.threads = 1;
  p.assets = {{"statistics", "/x/stats.json"}};
  auto unknown = (*pi0)->make_preprocessor(dir, p);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.status().message().find("tokenizer, norm_stats"), std::string::npos) << unknown.status().message();
}

}  // namespace
}  // namespace edgevla::model::groot
