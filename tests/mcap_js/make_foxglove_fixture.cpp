// Writes edgevla bags for tests/mcap_js/foxglove.mjs, which checks Foxglove's view of them with
// readers no one here wrote (@mcap/core, @foxglove/schemas):
//
//   make_foxglove_fixture <out_dir>
//
//   source.mcap     edgevla channels only, as a recording without the foxglove option: camera
//                   frames (rgb8 and mono16 Images), Observations (state, a u8 camera and a f32
//                   normalized one, tokens), ActionChunks with stage times and a hop trace,
//                   RobotState, NodeStatus, a BackboneOutput with a rank-4 cache;
//                   run_foxglove.sh converts it with `edgevla bag export --foxglove`;
//   nocamera.mcap   the ActionChunks alone (an export makes plots and no image channel);
//   foreign.mcap    one json channel of another tool's (nothing an export can convert);
//   recorded.mcap   a live recording by the Recorder with foxglove: true (png frames);
//   manifest.json   what each holds: pixel patterns, sizes, counts and numbers to expect.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "msgs/types.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "runtime/bag/recorder.hpp"

namespace {

using namespace edgevla;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;
constexpr std::int64_t kPeriod = 33'000'000;
constexpr int kFrames = 5;

// Pixel patterns foxglove.mjs recomputes: rgb8 and mono16.
std::uint8_t rgb(int y, int x, int c, int k) { return static_cast<std::uint8_t>((x * 3 + y * 5 + c * 70 + k * 11) & 255); }
std::uint16_t mono16(int y, int x, int k) { return static_cast<std::uint16_t>((x * 500 + y * 900 + k) & 0xffff); }
float action(int i, int j, int k) { return static_cast<float>(i) * 0.5f + static_cast<float>(j) * 0.25f + static_cast<float>(k); }

Tensor rgb_frame(int h, int w, int k) {
  Tensor t = *Tensor::empty(DType::kU8, Shape{h, w, 3});
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) t.data<std::uint8_t>()[(y * w + x) * 3 + c] = rgb(y, x, c, k);
  return t;
}

void stamp(Message& m, const std::string& topic, int k, std::initializer_list<std::string> hops) {
  m.header().topic = topic;
  m.header().seq = static_cast<std::uint64_t>(k + 1);
  m.header().source_stamp_ns = kT0 + k * kPeriod;
  std::int64_t t = m.header().source_stamp_ns;
  for (const auto& h : hops) {
    t += 2'000'000;
    m.header().trace.push_back({h, t});
  }
  m.header().publish_stamp_ns = t + 1'000'000;
}

Message camera(int k) {
  Message m = *msgs::Image::make(rgb_frame(48, 64, k), "rgb8", "base");
  m.set_field("frame", std::int64_t{k});
  stamp(m, "/camera/base/image", k, {"camera"});
  return m;
}

Message depth(int k) {
  Tensor t = *Tensor::empty(DType::kU16, Shape{24, 32, 1});
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x) t.data<std::uint16_t>()[y * 32 + x] = mono16(y, x, k);
  Message m = *msgs::Image::make(t, "mono16", "depth");
  stamp(m, "/camera/depth/image", k, {"depth_camera"});
  return m;
}

Message observation(int k) {
  Tensor state = *Tensor::empty(DType::kF32, Shape{8});
  for (int i = 0; i < 8; ++i) state.data<float>()[i] = 0.1f * static_cast<float>(i) + static_cast<float>(k);
  Message m = *msgs::Observation::make(state);
  m.set_tensor("image.base", rgb_frame(48, 64, 100 + k));
  m.set_tensor("image.wrist", *Tensor::empty(DType::kF32, Shape{3, 16, 16}));  // normalized: not a picture
  Tensor tokens = *Tensor::empty(DType::kI32, Shape{4});
  for (int i = 0; i < 4; ++i) tokens.data<std::int32_t>()[i] = 1000 + i;
  m.set_tensor("tokens", tokens);
  Tensor mask = *Tensor::empty(DType::kBool, Shape{4});
  for (int i = 0; i < 4; ++i) mask.data<std::uint8_t>()[i] = i < 3;
  m.set_tensor("token_mask", mask);
  m.set_field("preprocess_ms", 1.5);
  stamp(m, "/policy/observation", k, {"camera", "preprocess"});
  return m;
}

Message chunk(int k) {
  Tensor a = *Tensor::empty(DType::kF32, Shape{10, 7});
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 7; ++j) a.data<float>()[i * 7 + j] = action(i, j, k);
  Message m = *msgs::ActionChunk::make(a, 0.02);
  m.set_field("preprocess_ms", 1.5);
  m.set_field("backbone_ms", 40.0 + k);
  m.set_field("action_head_ms", 12.25);
  m.set_field("observation_seq", std::int64_t{k + 1});
  stamp(m, "/policy/actions", k, {"camera", "preprocess", "backbone", "action_head"});
  return m;
}

Message robot_state(int k) {
  Tensor p = *Tensor::empty(DType::kF64, Shape{7});
  for (int i = 0; i < 7; ++i) p.data<double>()[i] = -0.5 + 0.125 * i + k;
  Message m = *msgs::RobotState::make(p);
  stamp(m, "/robot/state", k, {"robot"});
  return m;
}

Message status(int k) {
  Message m("NodeStatus", 1);
  m.set_field("node", std::string("backbone"));
  m.set_field("state", std::string("active"));
  m.set_field("process_rss_bytes", std::int64_t{1'000'000 + k});
  m.set_field("on_observation.p99_us", 4000.0 + k);
  stamp(m, "/status", k, {});
  return m;
}

Message prefix(int k) {
  Message m("BackboneOutput", 1);
  m.set_field("family", std::string("pi0"));
  m.set_tensor("kv", *Tensor::empty(DType::kF32, Shape{2, 4, 64, 32}));
  stamp(m, "/policy/prefix", k, {"camera", "preprocess", "backbone"});
  return m;
}

int write_bag(const std::string& path, bool with_cameras) {
  auto w = mcap::McapWriter::open(path);
  if (!w) {
    std::fprintf(stderr, "make_foxglove_fixture: %s\n", w.status().message().c_str());
    return 1;
  }
  std::map<std::string, std::uint16_t> channels;
  const auto put = [&](const Message& m) {
    const std::string& topic = m.header().topic;
    auto it = channels.find(topic);
    if (it == channels.end()) {
      const auto schema = (*w)->add_schema(m.type(), bag::kSchemaEncoding, bag::schema_text(m.type(), m.version()));
      it = channels
               .emplace(topic, (*w)->add_channel(topic, bag::kMessageEncoding, schema,
                                                 {{"edgevla.type", m.type()},
                                                  {"edgevla.type_version", std::to_string(m.version())}}))
               .first;
    }
    const auto t = static_cast<std::uint64_t>(m.header().publish_stamp_ns);
    return (*w)->write_message_with(it->second, static_cast<std::uint32_t>(m.header().seq), t, t,
                                    [&](std::string& out) { return bag::append_record(m, out); });
  };
  for (int k = 0; k < kFrames; ++k) {
    std::vector<Message> ms;
    if (with_cameras) {
      ms = {camera(k), depth(k), observation(k), robot_state(k), status(k), prefix(k)};
    }
    ms.push_back(chunk(k));
    for (const auto& m : ms) {
      if (Status s = put(m); !s.is_ok()) {
        std::fprintf(stderr, "make_foxglove_fixture: %s\n", s.message().c_str());
        return 1;
      }
    }
  }
  if (Status s = (*w)->close(); !s.is_ok()) {
    std::fprintf(stderr, "make_foxglove_fixture: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

// A live recording with the foxglove option: camera frames and action chunks over the bus.
// The bus registry lives in `dir`, which the test removes: nothing is left in /tmp.
int record(const std::string& path, const fs::path& dir) {
  BusOptions bo;
  bo.domain = "foxglove-fixture-" + std::to_string(::getpid());
  bo.registry_dir = (dir / "registry").string();
  auto bus = Bus::create(bo);
  if (!bus) {
    std::fprintf(stderr, "make_foxglove_fixture: %s\n", bus.status().message().c_str());
    return 1;
  }
  bag::RecorderOptions o;
  o.output = path;
  o.topics = {"/camera/base/image", "/policy/actions"};
  o.lossless = true;
  o.foxglove = true;
  o.foxglove_options.images = bag::FoxgloveImages::kPng;
  auto rec = bag::Recorder::start(**bus, o);
  if (!rec) {
    std::fprintf(stderr, "make_foxglove_fixture: %s\n", rec.status().message().c_str());
    return 1;
  }
  auto cam = *(*bus)->advertise("/camera/base/image", "Image", "camera");
  auto act = *(*bus)->advertise("/policy/actions", "ActionChunk", "action_head");
  for (int k = 0; k < kFrames; ++k) {
    Message c = camera(k);
    c.header() = Header{};
    Message a = chunk(k);
    a.header() = Header{};
    if (!(*bus)->publish(*cam, std::move(c)).is_ok() || !(*bus)->publish(*act, std::move(a)).is_ok()) {
      std::fprintf(stderr, "make_foxglove_fixture: publish failed\n");
      return 1;
    }
  }
  if (Status s = (*rec)->stop(); !s.is_ok()) {
    std::fprintf(stderr, "make_foxglove_fixture: %s\n", s.message().c_str());
    return 1;
  }
  const auto st = (*rec)->stats();
  if (st.written != 2 * kFrames) {
    std::fprintf(stderr, "make_foxglove_fixture: the recorder wrote %llu messages, expected %d\n",
                 static_cast<unsigned long long>(st.written), 2 * kFrames);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_foxglove_fixture <out_dir>\n");
    return 2;
  }
  const fs::path dir = argv[1];
  fs::create_directories(dir);
  if (write_bag((dir / "source.mcap").string(), true) != 0) return 1;
  if (write_bag((dir / "nocamera.mcap").string(), false) != 0) return 1;
  if (record((dir / "recorded.mcap").string(), dir) != 0) return 1;
  {
    auto w = mcap::McapWriter::open((dir / "foreign.mcap").string());
    if (!w) return 1;
    const auto ch = (*w)->add_channel("/other", "json", 0);
    const std::string data = R"({"x": 1})";
    if (!(*w)->write_message(ch, 1, 1, 1, {reinterpret_cast<const std::byte*>(data.data()), data.size()}).is_ok() ||
        !(*w)->close().is_ok()) {
      return 1;
    }
  }

  json m;
  m["frames"] = kFrames;
  m["t0_ns"] = std::to_string(kT0);
  m["period_ns"] = kPeriod;
  // Image channels an export makes: source topic -> where, size and pattern.
  m["images"] = json::array({
      json{{"source", "/camera/base/image"}, {"base", "/camera/base/image"}, {"frame_id", "base"}, {"width", 64},
           {"height", 48}, {"encoding", "rgb8"}, {"pattern", "rgb"}, {"frame_offset", 0}},
      json{{"source", "/camera/depth/image"}, {"base", "/camera/depth/image"}, {"frame_id", "depth"}, {"width", 32},
           {"height", 24}, {"encoding", "mono16"}, {"pattern", "mono16"}, {"frame_offset", 0}},
      json{{"source", "/policy/observation"}, {"base", "/policy/observation/image.base"}, {"frame_id", "base"},
           {"width", 64}, {"height", 48}, {"encoding", "rgb8"}, {"pattern", "rgb"}, {"frame_offset", 100}},
  });
  // Plot channels and arrays of known shape in them.
  m["plots"] = json{
      {"/policy/actions/plot", json{{"actions_rows", 10}, {"actions_cols", 7},
                                    {"fields", {"preprocess_ms", "backbone_ms", "action_head_ms", "dt_s"}},
                                    {"hops", {"camera", "preprocess", "backbone", "action_head"}}}},
      {"/policy/observation/plot", json{{"arrays", {{"state", 8}, {"tokens", 4}, {"token_mask", 4}}}}},
      {"/robot/state/plot", json{{"arrays", {{"position", 7}}}}},
      {"/status/plot", json{{"fields", {"process_rss_bytes", "on_observation_p99_us"}}}},
      {"/policy/prefix/plot", json{{"absent", {"kv"}}}},
      {"/camera/base/image/plot", json{{"fields", {"frame"}}}},
      {"/camera/depth/image/plot", json::object()},
  };
  std::ofstream(dir / "manifest.json") << m.dump(2) << "\n";
  return 0;
}
