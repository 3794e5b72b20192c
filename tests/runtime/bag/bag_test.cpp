// Recording and playback within one process: codec, recorder, player.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "msgs/types.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "runtime/bag/player.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/node/host.hpp"
#include "runtime/util/clock.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::bag {
namespace {

namespace fs = std::filesystem;
using testing::eventually;

std::string temp_path(const std::string& name) {
  static int n = 0;
  return (fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + std::to_string(++n) + "_" + name)).string();
}

std::unique_ptr<Bus> make_bus(const std::string& tag) {
  BusOptions o;
  o.domain = testing::unique_domain(tag);
  return std::move(*Bus::create(o));
}

Message image(std::uint8_t v, int h = 8, int w = 8) {
  Tensor px = *Tensor::empty(DType::kU8, Shape{h, w, 3});
  for (std::int64_t i = 0; i < px.numel(); ++i) px.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v + i);
  return *msgs::Image::make(px, "rgb8", "base");
}

struct Collector {
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::shared_ptr<SubscriptionQueue> queue;
  explicit Collector(const std::string& topic)
      : queue(std::make_shared<SubscriptionQueue>(topic, "", QoS::keep_last(100000), "collector", waker)) {}
};

std::vector<Message> read_bag(const std::string& path) {
  auto r = std::move(*mcap::McapReader::open(path));
  std::vector<Message> out;
  EXPECT_TRUE(r->for_each_message([&](const mcap::MessageView& v) {
                 auto m = decode_record(v);
                 EXPECT_TRUE(m.has_value()) << m.status().to_string();
                 if (m) out.push_back(std::move(*m));
                 return Status::ok();
               }).is_ok());
  return out;
}

TEST(BagCodec, RecordRoundTripKeepsHeaderFieldsAndTensors) {
  Message m = image(5);
  m.set_field("frame", std::int64_t{42});
  m.set_field("gain", 2.0);
  Tensor f = *Tensor::empty(DType::kF32, Shape{3, 4});
  for (int i = 0; i < 12; ++i) f.data<float>()[i] = 0.5f * static_cast<float>(i);
  m.set_tensor("extra", *f.slice(1, 1, 3));  // strided: recorded as contiguous bytes
  m.header() = {"/cam", 9, 100, 200, {{"camera", 150}}, "h/1/1#1"};
  const std::string path = temp_path("codec.mcap");
  {
    auto w = std::move(*mcap::McapWriter::open(path));
    const auto ch = w->add_channel("/cam", kMessageEncoding, w->add_schema("Image", kSchemaEncoding, schema_text("Image", 1)));
    ASSERT_TRUE(w->write_message_with(ch, 9, 300, 200, [&](std::string& out) { return append_record(m, out); }).is_ok());
    ASSERT_TRUE(w->close().is_ok());
  }
  auto got = read_bag(path);
  ASSERT_EQ(got.size(), 1u);
  const Message& g = got[0];
  EXPECT_EQ(g.type(), "Image");
  EXPECT_EQ(g.header().seq, 9u);
  EXPECT_EQ(g.header().source_stamp_ns, 100);
  EXPECT_EQ(g.header().publish_stamp_ns, 200);
  EXPECT_EQ(g.header().trace, m.header().trace);
  EXPECT_EQ(g.header().publisher, "h/1/1#1");
  EXPECT_EQ(*g.int_field("frame"), 42);
  EXPECT_TRUE(std::holds_alternative<double>(*g.field("gain")));
  EXPECT_EQ(std::memcmp(g.tensor("pixels")->raw_data(), m.tensor("pixels")->raw_data(), 192), 0);
  const Tensor& e = *g.tensor("extra");
  ASSERT_EQ(e.shape(), (Shape{3, 2}));
  EXPECT_EQ(e.data<float>()[0], 0.5f);   // [0][1]
  EXPECT_EQ(e.data<float>()[5], 5.0f);   // [2][2]
  EXPECT_TRUE(validate(g, msgs::Image::schema()).is_ok());
  const std::string text = schema_text("Image", 1);
  EXPECT_NE(text.find("version: 1"), std::string::npos);
  EXPECT_NE(text.find("pixels"), std::string::npos);
  fs::remove(path);
}

TEST(BagCodec, LargeTensorsAreViewedInTheMappedFile) {
  const std::string path = temp_path("big.mcap");
  Tensor big = *Tensor::empty(DType::kU8, Shape{std::int64_t{64} << 20});
  std::memset(big.raw_data(), 0x3c, big.nbytes());
  Message m("Blob", 1);
  m.set_tensor("data", big);
  {
    mcap::McapWriterOptions o;
    o.compression = mcap::Compression::kNone;
    auto w = std::move(*mcap::McapWriter::open(path, o));
    const auto ch = w->add_channel("/big", kMessageEncoding, 0);
    ASSERT_TRUE(w->write_message_with(ch, 1, 1, 1, [&](std::string& out) { return append_record(m, out); }).is_ok());
    ASSERT_TRUE(w->close().is_ok());
  }
  auto got = read_bag(path);
  ASSERT_EQ(got.size(), 1u);
  const Tensor& t = *got[0].tensor("data");
  EXPECT_EQ(t.nbytes(), big.nbytes());
  EXPECT_EQ(t.buffer()->kind(), BufferKind::kExternal);  // a view into the file mapping
  EXPECT_EQ(static_cast<int>(t.raw_data()[12345678]), 0x3c);
  fs::remove(path);
}

TEST(Recorder, RecordsEveryMessageWithItsHeader) {
  auto bus = make_bus("rec");
  const std::string path = temp_path("rec.mcap");
  RecorderOptions o;
  o.output = path;
  o.topics = {"/cam", "/act"};
  auto rec = Recorder::start(*bus, o);
  ASSERT_TRUE(rec.has_value()) << rec.status().to_string();
  auto cam = *bus->advertise("/cam", "Image", "camera");
  auto act = *bus->advertise("/act", "ActionChunk", "head");
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(bus->publish(*cam, image(static_cast<std::uint8_t>(i))).is_ok());
    if (i % 5 == 0) {
      ASSERT_TRUE(bus->publish(*act, *msgs::ActionChunk::make(*Tensor::empty(DType::kF32, Shape{10, 4}), 0.02)).is_ok());
    }
  }
  ASSERT_TRUE((*rec)->stop().is_ok());
  const auto st = (*rec)->stats();
  EXPECT_EQ(st.written, 60u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.per_topic.at("/cam"), 50u);
  auto got = read_bag(path);
  ASSERT_EQ(got.size(), 60u);
  std::uint64_t cam_seq = 0;
  for (const auto& m : got) {
    if (m.header().topic != "/cam") continue;
    EXPECT_EQ(m.header().seq, ++cam_seq);
    EXPECT_EQ(m.header().trace.at(0).node, "camera");
    const auto v = static_cast<std::uint8_t>(cam_seq - 1);
    EXPECT_EQ(m.tensor("pixels")->data<std::uint8_t>()[0], v);
  }
  auto r = std::move(*mcap::McapReader::open(path));
  EXPECT_TRUE(r->summary().has_summary);
  bool recording_meta = false;
  for (const auto& md : r->metadata()) recording_meta = recording_meta || md.name == "edgevla.recording";
  EXPECT_TRUE(recording_meta);
  fs::remove(path);
}

// /cam recorded uncompressed into parts of `split_bytes`.
RecorderOptions split_recording(const std::string& path, std::uint64_t split_bytes) {
  RecorderOptions o;
  o.output = path;
  o.topics = {"/cam"};
  o.compression = mcap::Compression::kNone;
  o.split_bytes = split_bytes;
  return o;
}

TEST(Recorder, SplitsIntoWholeBagsThatTogetherHoldEveryMessage) {
  EXPECT_EQ(part_path("runs/a.mcap", 2), "runs/a_002.mcap");
  EXPECT_EQ(part_path("b.mcap", 0), "b_000.mcap");
  auto bus = make_bus("recsplit");
  const std::string path = temp_path("split.mcap");
  RecorderOptions o = split_recording(path, 64 << 10);  // a 32x32 frame is ~3 KB: a part every ~20 frames
  o.chunk_bytes = 16 << 10;
  auto rec = Recorder::start(*bus, o);
  ASSERT_TRUE(rec.has_value()) << rec.status().to_string();
  auto cam = *bus->advertise("/cam", "Image", "camera");
  constexpr int kFrames = 150;
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(bus->publish(*cam, image(static_cast<std::uint8_t>(i), 32, 32)).is_ok());
    if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let the writer switch
  }
  ASSERT_TRUE((*rec)->stop().is_ok());
  const auto st = (*rec)->stats();
  EXPECT_EQ(st.written, static_cast<std::uint64_t>(kFrames));
  EXPECT_GE(st.parts, 4);
  EXPECT_FALSE(fs::exists(path)) << "split recordings write only numbered parts";
  std::uint64_t next_seq = 1, bytes = 0;
  for (int p = 0; p < st.parts; ++p) {
    const std::string part = part_path(path, p);
    ASSERT_TRUE(fs::exists(part)) << part;
    bytes += fs::file_size(part);
    auto r = mcap::McapReader::open(part);
    ASSERT_TRUE(r.has_value()) << part << ": " << r.status().to_string();
    EXPECT_TRUE((*r)->summary().has_summary) << part << " was not closed";
    std::string part_no, next;
    for (const auto& md : (*r)->metadata()) {
      if (md.name == "edgevla.recording") part_no = md.metadata.at("part");
      if (md.name == "edgevla.next_part") next = md.metadata.at("file");
    }
    EXPECT_EQ(part_no, std::to_string(p)) << part;
    EXPECT_EQ(next, p + 1 < st.parts ? fs::path(part_path(path, p + 1)).filename().string() : "") << part;
    // Every part decodes on its own (its own schemas and channels), and the parts continue
    // each other: no message lost or repeated at a switch.
    const auto got = read_bag(part);
    EXPECT_FALSE(got.empty()) << part;
    for (const auto& m : got) EXPECT_EQ(m.header().seq, next_seq++) << part;
    if (p + 1 < st.parts) {
      EXPECT_LE(fs::file_size(part), 2 * o.split_bytes) << part;
    }
    fs::remove(part);
  }
  EXPECT_EQ(next_seq, static_cast<std::uint64_t>(kFrames) + 1);
  EXPECT_EQ(st.bytes_written, bytes);
  EXPECT_FALSE(fs::exists(part_path(path, st.parts)));
}

// A part is switched when the next message comes, never left empty: with a limit every message
// exceeds, each part holds exactly one message and a stop right after the last one adds no
// empty part (the recorder once opened the next part as soon as one filled up).
TEST(Recorder, EveryPartHoldsAMessageAndAStopAfterAFullPartAddsNoEmptyOne) {
  auto bus = make_bus("recsplit1");
  const std::string path = temp_path("split1.mcap");
  const RecorderOptions o = split_recording(path, 1);
  auto rec = Recorder::start(*bus, o);
  ASSERT_TRUE(rec.has_value()) << rec.status().to_string();
  auto cam = *bus->advertise("/cam", "Image", "camera");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(bus->publish(*cam, image(static_cast<std::uint8_t>(i), 8, 8)).is_ok());
  ASSERT_TRUE(testing::eventually([&] { return (*rec)->stats().written == 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the writer loop runs on, idle
  ASSERT_TRUE((*rec)->stop().is_ok());
  EXPECT_EQ((*rec)->stats().parts, 3);
  for (int p = 0; p < 3; ++p) {
    const std::string part = part_path(path, p);
    const auto got = read_bag(part);
    ASSERT_EQ(got.size(), 1u) << part;
    EXPECT_EQ(got[0].header().seq, static_cast<std::uint64_t>(p + 1)) << part;
    fs::remove(part);
  }
  EXPECT_FALSE(fs::exists(part_path(path, 3)));
}

TEST(Recorder, FallsBehindByDroppingCountedNotByGrowing) {
  auto bus = make_bus("recdrop");
  const std::string path = temp_path("drop.mcap");
  RecorderOptions o;
  o.output = path;
  o.topics = {"/big"};
  o.max_queue_bytes = 3 << 20;  // one 2 MB message fits, a second does not
  o.compression = mcap::Compression::kZstd;
  auto rec = std::move(*Recorder::start(*bus, o));
  auto w = *bus->advertise("/big", "Blob", "src");
  for (int i = 0; i < 200; ++i) {  // 400 MB as fast as we can: more than the writer keeps up with
    Message m("Blob", 1);
    Tensor t = *Tensor::empty(DType::kU8, Shape{2 << 20});
    for (std::int64_t k = 0; k < t.numel(); k += 4096) t.data<std::uint8_t>()[k] = static_cast<std::uint8_t>(k * 7 + i);
    m.set_tensor("data", t);
    ASSERT_TRUE(bus->publish(*w, std::move(m)).is_ok());
  }
  ASSERT_TRUE(rec->stop().is_ok());
  const auto st = rec->stats();
  EXPECT_GT(st.dropped, 0u);
  EXPECT_EQ(st.written + st.dropped, 200u);  // every message is either in the bag or counted
  EXPECT_EQ(read_bag(path).size(), st.written);
  fs::remove(path);
}

// The recorder's QoS decides its role: an observer by default (never slows the graph, loses
// first), a pipeline subscriber with a declared backlog when lossless.
TEST(Recorder, IsAnObserverUnlessLossless) {
  for (const bool lossless : {false, true}) {
    auto bus = make_bus(lossless ? "reclossless" : "recobserver");
    const std::string path = temp_path("role.mcap");
    RecorderOptions o;
    o.output = path;
    o.topics = {"/cam"};
    o.lossless = lossless;
    auto rec = std::move(*Recorder::start(*bus, o));
    EXPECT_EQ(bus->observes_only("/cam"), !lossless);
    ASSERT_TRUE(rec->stop().is_ok());
    fs::remove(path);
  }
}

TEST(Recorder, AllPicksUpTopicsThatAppearLater) {
  auto bus = make_bus("recall");
  const std::string path = temp_path("all.mcap");
  RecorderOptions o;
  o.output = path;
  o.all = true;
  o.discovery_period = std::chrono::milliseconds(20);
  auto rec = std::move(*Recorder::start(*bus, o));
  auto late = *bus->advertise("/late", "Image", "cam");
  ASSERT_TRUE(eventually([&] {
    const auto t = rec->topics();
    return std::find(t.begin(), t.end(), "/late") != t.end();
  }));
  ASSERT_TRUE(bus->publish(*late, image(1)).is_ok());
  ASSERT_TRUE(eventually([&] { return rec->stats().written >= 1; }));
  ASSERT_TRUE(rec->stop().is_ok());
  EXPECT_EQ(read_bag(path).at(0).header().topic, "/late");
  fs::remove(path);
}

// A node with one param: what the recorder writes about the nodes it saw.
class GainNode final : public Node {
 public:
  explicit GainNode(const NodeOptions& o) : Node(o) {}
  Status configure(NodeSpec& spec) override { return spec.declare(gain); }
  Status activate() override { return Status::ok(); }
  Status deactivate() override { return Status::ok(); }
  Param<double> gain{"gain", 1.0, {"a value"}};
};

std::set<std::string> recorded_nodes(const std::string& path) {
  auto r = std::move(*mcap::McapReader::open(path));
  std::set<std::string> out;
  for (auto& m : r->metadata()) {
    if (m.name == "edgevla.node") out.insert(m.metadata.at("name"));
  }
  return out;
}

// A process adds its nodes one by one. Found by a ThreadSanitizer run (everything slower): the
// recorder asked a process for its nodes once, when it had only some, and the bag never named
// the others, so per-node replay of those failed.
TEST(Recorder, NodesAProcessAddsAfterTheRecorderFirstAskedAreRecordedToo) {
  auto bus = make_bus("recnodes");
  NodeHost host(*bus);
  const auto node = [](const std::string& name) {
    NodeOptions n;
    n.name = name;
    n.type = "gain";
    return std::make_unique<GainNode>(n);
  };
  ASSERT_TRUE(host.add(node("first")).has_value());
  const std::string path = temp_path("nodes.mcap");
  RecorderOptions o;
  o.output = path;
  o.all = true;
  o.discovery_period = std::chrono::milliseconds(20);
  auto rec = std::move(*Recorder::start(*bus, o));
  const auto rounds = std::chrono::milliseconds(static_cast<int>(400 * testing::time_scale()));
  std::this_thread::sleep_for(rounds);  // the recorder has asked this process by now
  ASSERT_TRUE(host.add(node("second")).has_value());
  std::this_thread::sleep_for(rounds);
  ASSERT_TRUE(rec->stop().is_ok());
  EXPECT_EQ(recorded_nodes(path), (std::set<std::string>{"first", "second"}));
  fs::remove(path);
}

// A bag of 50 images 20 ms apart (1 s), written directly.
std::string timed_bag() {
  const std::string path = temp_path("timed.mcap");
  auto w = std::move(*mcap::McapWriter::open(path));
  const auto ch = w->add_channel("/cam", kMessageEncoding, w->add_schema("Image", kSchemaEncoding, schema_text("Image", 1)));
  const auto other = w->add_channel("/other", kMessageEncoding, 0);
  for (int i = 0; i < 50; ++i) {
    Message m = image(static_cast<std::uint8_t>(i));
    m.header() = {"/cam", static_cast<std::uint64_t>(i + 1), 1000 + i, 2000 + i, {{"camera", 2000 + i}}, "rec/1/1#1"};
    const auto t = 1'000'000'000ull + static_cast<std::uint64_t>(i) * 20'000'000ull;
    EXPECT_TRUE(w->write_message_with(ch, static_cast<std::uint32_t>(i + 1), t, t, [&](std::string& out) {
                   return append_record(m, out);
                 }).is_ok());
    if (i % 10 == 0) {
      Message o = image(0);
      o.header().topic = "/other";
      EXPECT_TRUE(w->write_message_with(other, 1, t, t, [&](std::string& out) { return append_record(o, out); }).is_ok());
    }
  }
  EXPECT_TRUE(w->close().is_ok());
  return path;
}

// Plays and returns the wall time from first to last /cam arrival, and what arrived.
std::pair<double, std::vector<MessagePtr>> play_and_time(const std::string& path, PlayOptions o) {
  auto bus = make_bus("play");
  Collector c("/cam");
  EXPECT_TRUE(bus->attach(c.queue).is_ok());
  o.topics = {"/cam"};
  auto stats = play(*bus, path, o);
  EXPECT_TRUE(stats.has_value()) << stats.status().to_string();
  std::vector<MessagePtr> got;
  std::int64_t first = 0, last = 0;
  for (auto s = c.queue->pop_stamped(); s.message; s = c.queue->pop_stamped()) {
    if (first == 0) first = s.arrival_ns;
    last = s.arrival_ns;
    got.push_back(s.message);
  }
  return {static_cast<double>(last - first) / 1e9, got};
}

TEST(Player, KeepsOriginalTimingAndHeaders) {
  const std::string path = timed_bag();
  auto [span1, got] = play_and_time(path, {});
  ASSERT_EQ(got.size(), 50u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Header& h = got[i]->header();
    EXPECT_EQ(h.seq, i + 1);  // as recorded, not re-stamped
    EXPECT_EQ(h.source_stamp_ns, static_cast<std::int64_t>(1000 + i));
    EXPECT_EQ(h.publish_stamp_ns, static_cast<std::int64_t>(2000 + i));
    EXPECT_EQ(h.publisher, "rec/1/1#1");
    ASSERT_EQ(h.trace.size(), 1u);
    EXPECT_EQ(got[i]->tensor("pixels")->data<std::uint8_t>()[0], static_cast<std::uint8_t>(i));
  }
  auto [span2, got2] = play_and_time(path, {.rate = 2.0});
  ASSERT_EQ(got2.size(), 50u);
  // The recorded span is 0.98 s; compare the two rates as a ratio (robust on a busy machine).
  EXPECT_GT(span1, 0.5);
  EXPECT_GT(span1 / span2, 1.5);
  EXPECT_LT(span1 / span2, 2.6);
  fs::remove(path);
}

TEST(Player, OffsetDurationAndTopicFilters) {
  const std::string path = timed_bag();
  auto [span, got] = play_and_time(path, {.rate = 4.0, .start_offset_s = 0.5, .duration_s = 0.2});
  // Messages with log time in [0.5 s, 0.7 s] of the bag: indexes 25..35.
  ASSERT_EQ(got.size(), 11u);
  EXPECT_EQ(got.front()->header().seq, 26u);
  auto bus = make_bus("playall");
  Collector other("/other");
  ASSERT_TRUE(bus->attach(other.queue).is_ok());
  auto stats = play(*bus, path, {.rate = 50.0, .loop = false});
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->published, 55u);
  EXPECT_EQ(other.queue->size(), 5u);
  EXPECT_FALSE(play(*bus, path, {.rate = 0}).has_value());
  EXPECT_FALSE(play(*bus, path + ".missing", {}).has_value());
  fs::remove(path);
}

TEST(Player, LoopsUntilStopped) {
  const std::string path = timed_bag();
  auto bus = make_bus("loop");
  Collector c("/cam");
  ASSERT_TRUE(bus->attach(c.queue).is_ok());
  std::atomic<bool> stop{false};
  Expected<PlayStats> stats = invalid_argument("not run");
  std::thread t([&] { stats = play(*bus, path, {.rate = 20.0, .loop = true, .topics = {"/cam"}}, &stop); });
  ASSERT_TRUE(eventually([&] { return c.queue->size() >= 120; }));  // past two passes of 50
  stop.store(true);
  t.join();
  ASSERT_TRUE(stats.has_value()) << stats.status().to_string();
  EXPECT_GE(stats->loops, 3u);
  EXPECT_GE(stats->published, 120u);
  fs::remove(path);
}

}  // namespace
}  // namespace edgevla::bag
