// `edgevla bag report` splits camera -> actuation into stage compute and framework overhead. When
// the backbone publishes its prefix before its device work is done and the action head runs in
// another process, the prefix's delivery and the head's work before its wait overlap the
// backbone's device work (the chunk's prefix_overlap_ms): that time is the backbone's, not
// overhead. A bag of one hand-made chunk path with known stamps checks the split both ways.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "msgs/message.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::int64_t kUs = 1000;
constexpr std::int64_t kMs = 1000 * kUs;

// One chunk's path, in ns after the capture stamp B (the test's stamps are made-up but consistent):
// camera publishes at 0.1 ms; preprocess runs 0.2 -> 1.2 ms (0.9 ms compute); the backbone's
// callback starts at 1.3 ms and publishes at 1.5 ms (0.15 ms of host work); the head's callback
// starts at 1.6 ms and runs its engine at once, which waits for the cache from 1.62 to 7.5 ms,
// computes 9.0 ms and publishes at 16.55 ms; actuation takes the chunk at 16.62 ms.
struct Path {
  std::int64_t base = 1'700'000'000'000'000'000;
  bool overlap = true;  // the head reports the hidden part (else: as before, only its wait)
};

void write_bag(const std::string& path, const Path& p) {
  mcap::McapWriterOptions o;
  o.compression = mcap::Compression::kNone;
  auto w = std::move(*mcap::McapWriter::open(path, o));
  std::uint32_t seq = 0;
  auto put = [&](const std::string& topic, Message m, std::int64_t t) {
    m.header().topic = topic;
    m.header().seq = ++seq;
    const auto schema = w->add_schema(m.type(), bag::kSchemaEncoding, bag::schema_text(m.type(), m.version()));
    const auto channel = w->add_channel(topic, bag::kMessageEncoding, schema, {});
    ASSERT_TRUE(w->write_message_with(channel, seq, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(t),
                                      [&](std::string& out) { return bag::append_record(m, out); })
                    .is_ok());
  };
  const std::int64_t B = p.base;
  const std::vector<TraceHop> trace = {{"camera", B + 100 * kUs},
                                       {"preprocess", B + 1200 * kUs},
                                       {"backbone", B + 1500 * kUs},
                                       {"action_head", B + 16550 * kUs}};
  Message obs("Observation", 1);
  obs.header().source_stamp_ns = B;
  obs.header().callback_stamp_ns = B + 200 * kUs;
  obs.header().trace = {trace[0], trace[1]};
  put("/observation", std::move(obs), B + 1200 * kUs);
  Message prefix("BackboneOutput", 1);
  prefix.header().source_stamp_ns = B;
  prefix.header().callback_stamp_ns = B + 1300 * kUs;
  prefix.header().trace = {trace[0], trace[1], trace[2]};
  put("/prefix", std::move(prefix), B + 1500 * kUs);
  Message chunk("ActionChunk", 1);
  chunk.header().source_stamp_ns = B;
  chunk.header().callback_stamp_ns = B + 1600 * kUs;
  chunk.header().trace = trace;
  // The overlap: from the backbone's publish (1.5 ms) to the engine's start (1.6 ms).
  const double wait_ms = 5.88, overlap_ms = 0.10;
  chunk.set_field("preprocess_ms", 0.9);
  chunk.set_field("backbone_ms", 0.15 + wait_ms + (p.overlap ? overlap_ms : 0.0));
  chunk.set_field("action_head_ms", 14.9 - wait_ms);  // the engine's 14.9 ms less its wait
  chunk.set_field("prefix_wait_ms", wait_ms);
  if (p.overlap) chunk.set_field("prefix_overlap_ms", overlap_ms);
  put("/chunks", std::move(chunk), B + 16550 * kUs);
  Message cmd("JointCommand", 1);
  cmd.header().source_stamp_ns = B;
  cmd.header().trace = {trace[0], trace[1], trace[2], trace[3], {"actuation", B + 16700 * kUs}};
  cmd.set_field("chunk_seq", static_cast<std::int64_t>(3));
  cmd.set_field("chunk_received_ns", B + 16620 * kUs);
  put("/command", std::move(cmd), B + 16700 * kUs);
  ASSERT_TRUE(w->close().is_ok());
}

json report(const Path& p, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("edgevla_report_accounting_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bag = (dir / (tag + ".mcap")).string(), out = (dir / (tag + ".json")).string();
  write_bag(bag, p);
  auto r = testing::run({testing::bin_dir() + "/edgevla", "bag", "report", bag, "--json", out}, {}, (dir / tag).string());
  EXPECT_EQ(r.code, 0) << r.err;
  std::ifstream f(out);
  json j = json::parse(f, nullptr, /*allow_exceptions=*/false);
  fs::remove_all(dir);
  return j;
}

double p50(const json& j, const char* group, const char* key) { return j.at(group).at(key).at("p50").get<double>(); }

TEST(BagReportAccounting, ADeliveryHiddenUnderTheBackbonesDeviceWorkIsNotOverhead) {
  const json j = report(Path{}, "overlap");
  ASSERT_TRUE(j.is_object());
  // 16.62 ms camera -> actuation; stages 0.1 + 0.9 + 6.13 + 9.02 ms.
  EXPECT_NEAR(p50(j, "latency_ms", "camera_to_actuation"), 16.62, 1e-6);
  EXPECT_NEAR(p50(j, "stages_ms", "backbone"), 6.13, 1e-6);
  EXPECT_NEAR(p50(j, "latency_ms", "framework_overhead"), 0.47, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "delivery_backbone_to_action_head"), 0.0, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "in_backbone"), 0.05, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "in_action_head"), 0.05, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "delivery_preprocess_to_backbone"), 0.1, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "delivery_action_head_to_actuation"), 0.07, 1e-6);
}

TEST(BagReportAccounting, WithoutAnOverlapTheDeliveryIsOverhead) {
  const json j = report(Path{.overlap = false}, "plain");
  ASSERT_TRUE(j.is_object());
  EXPECT_NEAR(p50(j, "stages_ms", "backbone"), 6.03, 1e-6);
  EXPECT_NEAR(p50(j, "latency_ms", "framework_overhead"), 0.57, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "delivery_backbone_to_action_head"), 0.1, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "in_backbone"), 0.05, 1e-6);
  EXPECT_NEAR(p50(j, "overhead_ms", "in_action_head"), 0.05, 1e-6);
}

}  // namespace
}  // namespace edgevla
