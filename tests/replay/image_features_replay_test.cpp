// Per-node replay of the image_features demo stage from a recording this test makes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/node/host.hpp"
#include "tests/support/process.hpp"
#include "tests/support/replay.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;

ParamOverride yaml(const std::string& v) { return {YAML::Load(v), "test"}; }

// Copies `from` to `to` (metadata and messages) keeping the messages `keep` accepts.
void copy_bag(const std::string& from, const std::string& to, const std::function<bool(const mcap::MessageView&)>& keep) {
  auto reader = std::move(*mcap::McapReader::open(from));
  auto w = std::move(*mcap::McapWriter::open(to));
  for (const auto& m : reader->metadata()) ASSERT_TRUE(w->write_metadata(m.name, m.metadata).is_ok());
  std::map<std::uint16_t, std::uint16_t> ch;
  ASSERT_TRUE(reader->for_each_message([&](const mcap::MessageView& v) {
                       if (!keep(v)) return Status::ok();
                       if (!ch.contains(v.channel->id)) {
                         ch[v.channel->id] = w->add_channel(v.channel->topic, v.channel->message_encoding, 0,
                                                            v.channel->metadata);
                       }
                       return w->write_message(ch[v.channel->id], v.record.sequence, v.record.log_time,
                                               v.record.publish_time, v.record.data);
                     }).is_ok());
  ASSERT_TRUE(w->close().is_ok());
}

// Records 40 frames through source -> features with noise, once per test binary run.
class FeaturesReplay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    bag_ = new std::string((fs::path(::testing::TempDir()) / ("features_" + std::to_string(::getpid()) + ".mcap")).string());
    BusOptions bo;
    bo.domain = testing::unique_domain("replayrec");
    auto bus = std::move(*Bus::create(bo));
    NodeHostOptions ho;
    ho.status_period = std::chrono::milliseconds(0);
    NodeHost host(*bus, ho);
    NodeOptions src{"source", "tensor_source"};
    src.params = {{"rate_hz", yaml("200")}, {"width", yaml("32")}, {"height", yaml("24")}, {"max_frames", yaml("40")}};
    src.remaps = {{"image", "/cam"}};
    NodeOptions feat{"features", "image_features"};
    feat.params = {{"gain", yaml("1.0")}, {"noise_std", yaml("0.05")}};
    feat.remaps = {{"image", "/cam"}, {"features", "/features"}};
    ASSERT_TRUE(host.add(feat).has_value());
    ASSERT_TRUE(host.add(src).has_value());
    bag::RecorderOptions ro;
    ro.output = *bag_;
    ro.topics = {"/cam", "/features"};
    auto rec = std::move(*bag::Recorder::start(*bus, ro));
    ASSERT_TRUE(host.activate_all().is_ok());
    ASSERT_TRUE(testing::eventually([&] { return rec->stats().written >= 80; }));
    ASSERT_TRUE(host.deactivate_all().is_ok());
    ASSERT_TRUE(rec->stop().is_ok());
  }
  static void TearDownTestSuite() {
    // The bag and every file named after it (the CLI runs' logs, the damaged copy).
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(*bag_).parent_path(), ec)) {
      if (e.path().string().starts_with(*bag_ + ".")) fs::remove(e.path(), ec);
    }
    fs::remove(*bag_);
    delete bag_;
  }
  static bag::ReplayOptions options() {
    bag::ReplayOptions o;
    o.bag = *bag_;
    o.node = "features";
    return o;
  }
  static std::string* bag_;
};
std::string* FeaturesReplay::bag_ = nullptr;

TEST_F(FeaturesReplay, ReproducesTheRecordedOutputsBitForBit) {
  auto o = options();
  o.tolerance.rel_l2 = 0;  // same backend, same generator states: exactly the same
  o.tolerance.max_abs = 0;
  EXPECT_REPLAY_PASSES(o);
  auto r = bag::replay_node(o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->inputs, 40u);
  EXPECT_EQ(r->outputs.at("/features"), (std::pair<std::size_t, std::size_t>{40, 40}));
  EXPECT_EQ(r->tensors.size(), 40u);
  EXPECT_EQ(r->latency_ms.size(), 40u);
}

TEST_F(FeaturesReplay, APerturbedParameterFails) {
  auto o = options();
  o.sets = {"gain=1.01"};
  EXPECT_REPLAY_FAILS(o);
  // A tolerance loose enough for a 1% gain change passes again.
  o.tolerance.rel_l2 = 0.05;
  EXPECT_REPLAY_PASSES(o);
}

TEST_F(FeaturesReplay, ParamsFileAndPerTensorTolerances) {
  const auto params = (fs::path(::testing::TempDir()) / ("replay_params_" + std::to_string(::getpid()) + ".yaml")).string();
  std::ofstream(params) << "features:\n  noise_std: 0.06\n";
  auto o = options();
  o.params_file = params;
  EXPECT_REPLAY_FAILS(o);
  ASSERT_TRUE(bag::parse_tolerance("actions:max_abs=1,rel_l2=1", o.tolerance, o.per_tensor).is_ok());
  EXPECT_REPLAY_PASSES(o);
  // A params file of the wrong shape is an error naming the file, not an exception.
  for (const char* text : {"features:\n  ? [noise_std]\n  : 0.06\n", "features: [noise_std, 0.06]\n", "- features\n"}) {
    std::ofstream(params) << text;
    o = options();
    o.params_file = params;
    auto r = bag::replay_node(o);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_NE(r.status().message().find(params), std::string::npos) << r.status().message();
  }
  fs::remove(params);
}

TEST_F(FeaturesReplay, ClearErrors) {
  auto o = options();
  o.node = "ghost";
  auto r = bag::replay_node(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("features"), std::string::npos);  // lists recorded nodes
  o = options();
  o.sets = {"gian=2"};
  r = bag::replay_node(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("'gian'"), std::string::npos);
  o = options();
  o.bag += ".missing";
  EXPECT_FALSE(bag::replay_node(o).has_value());
  bag::Tolerance t;
  std::map<std::string, bag::Tolerance> per;
  EXPECT_FALSE(bag::parse_tolerance("rel_l3=1", t, per).is_ok());
  EXPECT_FALSE(bag::parse_tolerance("rel_l2=x", t, per).is_ok());
}

TEST_F(FeaturesReplay, ABagWithoutTheNodesInputsIsAnError) {
  // Record only the outputs: the node's input topic is absent.
  const auto path = (fs::path(::testing::TempDir()) / ("noinputs_" + std::to_string(::getpid()) + ".mcap")).string();
  copy_bag(*bag_, path, [](const mcap::MessageView& v) { return v.channel->topic == "/features"; });
  auto o = options();
  o.bag = path;
  auto r = bag::replay_node(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("/cam"), std::string::npos);
  fs::remove(path);
}

TEST_F(FeaturesReplay, AnInputTheRecorderMissedIsReportedNotComparedAsDrift) {
  // The bag without the 10th frame on /cam: the output made from it names an input the bag
  // lacks. Replay says so instead of feeding the neighbouring frame and reporting a drift.
  const auto path = (fs::path(::testing::TempDir()) / ("missing_" + std::to_string(::getpid()) + ".mcap")).string();
  std::int64_t dropped_stamp = 0;
  int frames = 0;
  copy_bag(*bag_, path, [&](const mcap::MessageView& v) {
    if (v.channel->topic != "/cam" || ++frames != 10) return true;
    auto m = bag::decode_record(v);
    if (m) dropped_stamp = m->header().publish_stamp_ns;
    return false;
  });
  ASSERT_NE(dropped_stamp, 0);
  auto o = options();
  o.bag = path;
  auto r = bag::replay_node(o);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_FALSE(r->passed());
  bool named = false;
  for (const auto& p : r->problems) {
    named = named || (p.find("/cam") != std::string::npos && p.find(std::to_string(dropped_stamp)) != std::string::npos &&
                      p.find("recorder missed") != std::string::npos);
  }
  EXPECT_TRUE(named) << r->table();
  fs::remove(path);
}

TEST_F(FeaturesReplay, AnInputOfTheWrongTypeIsAnError) {
  // The node's configuration, but /cam carries ActionChunks instead of Images.
  const auto path = (fs::path(::testing::TempDir()) / ("wrongtype_" + std::to_string(::getpid()) + ".mcap")).string();
  {
    auto reader = std::move(*mcap::McapReader::open(*bag_));
    auto w = std::move(*mcap::McapWriter::open(path));
    for (const auto& m : reader->metadata()) ASSERT_TRUE(w->write_metadata(m.name, m.metadata).is_ok());
    const auto ch = w->add_channel("/cam", bag::kMessageEncoding, 0);
    Message chunk = *msgs::ActionChunk::make(*Tensor::empty(DType::kF32, Shape{4, 3}), 0.02);
    ASSERT_TRUE(w->write_message_with(ch, 1, 1, 1, [&](std::string& out) { return bag::append_record(chunk, out); }).is_ok());
    ASSERT_TRUE(w->close().is_ok());
  }
  auto o = options();
  o.bag = path;
  auto r = bag::replay_node(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("carries ActionChunk"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("expecting Image"), std::string::npos);
  fs::remove(path);
}

TEST_F(FeaturesReplay, CommandLineExitCodesAndReport) {
  const std::string exe = testing::bin_dir() + "/edgevla";
  const std::string report = *bag_ + ".json";
  auto pass = testing::run({exe, "replay", "--bag", *bag_, "--node", "features", "--report", report}, {}, *bag_ + ".p");
  EXPECT_EQ(pass.code, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("RESULT: PASS"), std::string::npos);
  const YAML::Node j = YAML::LoadFile(report);
  EXPECT_TRUE(j["passed"].as<bool>());
  EXPECT_EQ(j["inputs"].as<int>(), 40);
  auto fail = testing::run({exe, "replay", "--bag", *bag_, "--node", "features", "--set", "gain=2"}, {}, *bag_ + ".f");
  EXPECT_EQ(fail.code, 1) << fail.out;
  auto error = testing::run({exe, "replay", "--bag", *bag_, "--node", "nobody"}, {}, *bag_ + ".e");
  EXPECT_EQ(error.code, 2);
  fs::remove(report);
}

TEST_F(FeaturesReplay, ADamagedBagFailsReplayAndPlayUnlessSkippingIsAsked) {
  // One byte flipped inside the data: a chunk fails its CRC (or no longer decompresses).
  const std::string damaged = *bag_ + ".damaged.mcap";
  fs::copy_file(*bag_, damaged, fs::copy_options::overwrite_existing);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(damaged));
    f.seekg(size / 3);
    char c = 0;
    f.get(c);
    f.seekp(size / 3);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  const std::string exe = testing::bin_dir() + "/edgevla";
  // This bag is one chunk: nothing of it is left to replay, and the error says why.
  auto r = testing::run({exe, "replay", "--bag", damaged, "--node", "features"}, {}, damaged + ".r");
  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("is damaged"), std::string::npos) << r.out << r.err;
  auto p = testing::run({exe, "bag", "play", damaged, "--rate", "100", "--warmup-ms", "0"},
                        {"EDGEVLA_DOMAIN=" + testing::unique_domain("dmg")}, damaged + ".p");
  EXPECT_EQ(p.code, 1) << p.out << p.err;
  EXPECT_NE(p.err.find("is damaged"), std::string::npos) << p.err;
  auto ps = testing::run({exe, "bag", "play", damaged, "--rate", "100", "--warmup-ms", "0", "--skip-damaged"},
                         {"EDGEVLA_DOMAIN=" + testing::unique_domain("dmg")}, damaged + ".ps");
  EXPECT_EQ(ps.code, 0) << ps.out << ps.err;
  EXPECT_NE(ps.err.find("warning"), std::string::npos) << ps.err;
  // The intact bag plays with exit 0 and no warning.
  auto ok = testing::run({exe, "bag", "play", *bag_, "--rate", "100", "--warmup-ms", "0"},
                         {"EDGEVLA_DOMAIN=" + testing::unique_domain("dmg")}, damaged + ".ok");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("damaged"), std::string::npos) << ok.err;
  fs::remove(damaged);
}

}  // namespace
}  // namespace edgevla
