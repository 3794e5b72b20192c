// GR00T's preprocess stage at the model layer (runtime/model/groot/preprocessor.hpp) against
// groot_numpy.py's `preprocess` (through preprocess_oracle.py) on a generated tiny checkpoint:
// pixel values of every view bit-identical, the same prompt ids, mask and padding, the same
// normalised state and embodiment id, for 1-, 2- and 3-view embodiments, letterbox on and off;
// and each bad input is one clear error.
#include "runtime/model/groot/preprocessor.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

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
      frames.push_back(Frame{h, w, read_raw<std::uint8_t>(out + "/frame." + std::to_string(k))});
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
  const Frame f{64, 64, std::vector<std::uint8_t>(64 * 64 * 3, 100)};
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

}  // namespace
}  // namespace edgevla::model::groot
