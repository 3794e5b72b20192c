// Foxglove views of edgevla messages: encoders against the camera node's decoders, the JSON
// the converter makes, what it skips and counts, the recorder option and `bag export`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "msgs/types.hpp"
#include "nodes/camera/image_files.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/foxglove.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/bag/player.hpp"
#include "runtime/bag/recorder.hpp"
#include "runtime/node/host.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::bag {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string temp_path(const std::string& name) {
  static int n = 0;
  return (fs::path(::testing::TempDir()) / ("fox_" + std::to_string(::getpid()) + "_" + std::to_string(++n) + "_" + name))
      .string();
}

Tensor pattern(int h, int w, int c) {
  Tensor t = *Tensor::empty(DType::kU8, Shape{h, w, c});
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>((i * 7 + i / 97) & 255);
  return t;
}

// Tensor::empty leaves its bytes as the pool had them; a float left that way can read as NaN,
// which the Foxglove view skips and counts. Tests that count skips publish zeros.
Tensor zeros(DType dtype, const Shape& shape) {
  Tensor t = *Tensor::empty(dtype, shape);
  std::memset(t.data<std::uint8_t>(), 0, t.nbytes());
  return t;
}

// A smooth picture: JPEG keeps it within a few levels.
Tensor gradient(int h, int w) {
  Tensor t = *Tensor::empty(DType::kU8, Shape{h, w, 3});
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) t.data<std::uint8_t>()[(y * w + x) * 3 + c] = static_cast<std::uint8_t>(x * 2 + y + c * 40);
  return t;
}

std::span<const std::uint8_t> u8(const std::string& s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

std::string b64(std::string_view s) { return base64_encode({reinterpret_cast<const std::byte*>(s.data()), s.size()}); }

TEST(Foxglove, Base64MatchesTheRfc4648Vectors) {
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(b64(std::string("\xff\xfe\x00", 3)), "//4A");
}

// The PNG encoder against the camera node's libpng decoder: the same pixels come back.
TEST(Foxglove, PngRoundTripsThroughTheCameraDecoder) {
  const Tensor px = pattern(13, 17, 3);
  auto png = encode_png(px, "rgb8");
  ASSERT_TRUE(png.has_value()) << png.status().to_string();
  auto back = nodes::decode_image(u8(*png), "png");
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  ASSERT_EQ(back->width, 17);
  ASSERT_EQ(back->height, 13);
  EXPECT_EQ(0, std::memcmp(back->pixels.data(), px.raw_data(), px.nbytes()));

  // bgr8 is swapped to RGB, mono8 expands to R=G=B.
  auto bgr = encode_png(px, "bgr8");
  ASSERT_TRUE(bgr.has_value());
  auto bback = *nodes::decode_image(u8(*bgr), "bgr png");
  EXPECT_EQ(bback.pixels[0], px.data<std::uint8_t>()[2]);
  EXPECT_EQ(bback.pixels[2], px.data<std::uint8_t>()[0]);
  const Tensor gray = pattern(5, 6, 1);
  auto mono = *nodes::decode_image(u8(*encode_png(gray, "mono8")), "mono png");
  for (int i = 0; i < 30; ++i) ASSERT_EQ(mono.pixels[static_cast<std::size_t>(i) * 3 + 1], gray.data<std::uint8_t>()[i]);
}

TEST(Foxglove, JpegDecodesCloseToTheFrame) {
  const Tensor px = gradient(40, 48);
  auto jpeg = encode_jpeg(px, "rgb8", 95);
  ASSERT_TRUE(jpeg.has_value()) << jpeg.status().to_string();
  auto back = nodes::decode_image(u8(*jpeg), "jpeg");
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  ASSERT_EQ(back->width, 48);
  ASSERT_EQ(back->height, 40);
  double err = 0;
  for (std::size_t i = 0; i < back->pixels.size(); ++i) err += std::abs(back->pixels[i] - px.data<std::uint8_t>()[i]);
  EXPECT_LT(err / static_cast<double>(back->pixels.size()), 3.0);  // mean absolute error, levels
  // Quality trades size: 10 is much smaller than 95.
  EXPECT_LT(encode_jpeg(px, "rgb8", 10)->size(), jpeg->size());
  // rgba8 drops alpha, bgr8 is swapped.
  EXPECT_TRUE(encode_jpeg(pattern(8, 8, 4), "rgba8", 90).has_value());
  auto bgr = *nodes::decode_image(u8(*encode_jpeg(px, "bgr8", 95)), "bgr jpeg");
  EXPECT_NEAR(bgr.pixels[0], px.data<std::uint8_t>()[2], 6);
}

TEST(Foxglove, EncodersRefusePixelsThatDoNotMatchTheirEncoding) {
  const auto message = [](const Expected<std::string>& e) { return e.has_value() ? std::string() : e.status().message(); };
  const Tensor f32 = *Tensor::empty(DType::kF32, Shape{4, 4, 3});
  EXPECT_NE(message(encode_jpeg(f32, "rgb8", 90)).find("needs u8 [H, W, 3]"), std::string::npos);
  EXPECT_NE(message(encode_png(pattern(4, 4, 4), "rgb8")).find("needs u8 [H, W, 3]"), std::string::npos);
  EXPECT_NE(message(encode_png(pattern(4, 4, 3), "yuv")).find("no Foxglove image encoding"), std::string::npos);
  EXPECT_NE(message(encode_jpeg(*Tensor::empty(DType::kU16, Shape{4, 4, 1}), "mono16", 90)).find("as png"),
            std::string::npos);
  EXPECT_NE(message(encode_jpeg(pattern(4, 4, 3), "rgb8", 0)).find("1..100"), std::string::npos);
  EXPECT_NE(message(encode_png(*Tensor::empty(DType::kU8, Shape{0, 4, 3}), "rgb8")).find("[H, W, 3]"),
            std::string::npos);
  EXPECT_FALSE(parse_foxglove_images("webp").has_value());
  EXPECT_NE(parse_foxglove_images("webp").status().message().find("jpeg"), std::string::npos);
}

Message stamped(Message m, const std::string& topic) {
  m.header().topic = topic;
  m.header().seq = 3;
  m.header().source_stamp_ns = 1'000'000'000;
  m.header().trace = {{"camera", 1'002'000'000}, {"backbone", 1'010'000'000}};
  m.header().publish_stamp_ns = 1'012'500'000;
  return m;
}

std::vector<FoxgloveMessage> convert(const Message& m, const std::string& topic, FoxgloveSkips& skips,
                                     FoxgloveOptions o = {}) {
  std::vector<FoxgloveMessage> out;
  to_foxglove(m, topic, o, out, skips);
  return out;
}

const FoxgloveMessage* find(const std::vector<FoxgloveMessage>& v, const std::string& topic) {
  for (const auto& f : v) {
    if (f.topic == topic) return &f;
  }
  return nullptr;
}

TEST(Foxglove, ImageBecomesACompressedImageAndAPlot) {
  FoxgloveSkips skips;
  const Tensor px = pattern(6, 10, 3);
  const Message m = stamped(*msgs::Image::make(px, "rgb8", "wrist"), "/cam");
  for (const auto images : {FoxgloveImages::kPng, FoxgloveImages::kRaw}) {
    FoxgloveOptions o;
    o.images = images;
    auto out = convert(m, "/cam", skips, o);
    ASSERT_EQ(out.size(), 2u);
    const bool raw = images == FoxgloveImages::kRaw;
    const FoxgloveMessage* img = find(out, raw ? "/cam/raw" : "/cam/compressed");
    ASSERT_NE(img, nullptr);
    EXPECT_EQ(img->schema_name, raw ? "foxglove.RawImage" : "foxglove.CompressedImage");
    const json j = json::parse(img->data);
    EXPECT_EQ(j["frame_id"], "wrist");
    EXPECT_EQ(j["timestamp"]["sec"], 1);  // capture time
    EXPECT_EQ(j["timestamp"]["nsec"], 0);
    const json schema = json::parse(foxglove_schema(*img));
    for (const auto& f : schema["required"]) EXPECT_TRUE(j.contains(f.get<std::string>())) << f;
    if (raw) {
      EXPECT_EQ(j["width"], 10);
      EXPECT_EQ(j["height"], 6);
      EXPECT_EQ(j["step"], 30);
      EXPECT_EQ(j["encoding"], "rgb8");
      EXPECT_EQ(j["data"], base64_encode(px.bytes()));
    } else {
      EXPECT_EQ(j["format"], "png");
      const std::string png = *encode_png(px, "rgb8");
      EXPECT_EQ(j["data"], base64_encode(std::as_bytes(std::span(png))));
    }
  }
  EXPECT_TRUE(skips.empty());
}

TEST(Foxglove, PlotHoldsFieldsSmallTensorsAndLatencyPerHop) {
  Tensor a = *Tensor::empty(DType::kF32, Shape{3, 2});
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = 0.5f * static_cast<float>(i);
  Message m = stamped(*msgs::ActionChunk::make(a, 0.02), "/act");
  m.set_field("backbone_ms", 7.5);
  m.set_field("replay.param.seed", std::int64_t{4});
  Tensor h = *Tensor::empty(DType::kF16, Shape{2});
  h.data<std::uint16_t>()[0] = float_to_half(1.5f);
  h.data<std::uint16_t>()[1] = float_to_half(-2.0f);
  m.set_tensor("half", h);
  m.set_tensor("scalar", *Tensor::from_values(std::span<const std::int32_t>(std::vector<std::int32_t>{9}), Shape{}));
  FoxgloveSkips skips;
  auto out = convert(m, "/act", skips);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].topic, "/act/plot");
  EXPECT_EQ(out[0].schema_name, "edgevla.plot.ActionChunk");
  const json j = json::parse(out[0].data);
  EXPECT_EQ(j["seq"], 3);
  EXPECT_EQ(j["timestamp"]["sec"], 1);
  EXPECT_EQ(j["timestamp"]["nsec"], 12'500'000);
  ASSERT_EQ(j["actions"].size(), 3u);
  EXPECT_EQ(j["actions"][2]["values"][1], 2.5);
  EXPECT_EQ(j["backbone_ms"], 7.5);
  EXPECT_EQ(j["dt_s"], 0.02);
  EXPECT_EQ(j["replay_param_seed"], 4);  // '.' would split a Foxglove message path
  EXPECT_EQ(j["half"][0], 1.5);
  EXPECT_EQ(j["half"][1], -2.0);
  EXPECT_EQ(j["scalar"], 9);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["camera"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["backbone"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["capture_to_publish"].get<double>(), 12.5);
  const json schema = json::parse(foxglove_schema(out[0]));
  EXPECT_EQ(schema["title"], "edgevla.plot.ActionChunk");
  EXPECT_EQ(schema["properties"]["timestamp"]["title"], "time");
  EXPECT_EQ(schema["properties"]["actions"]["items"]["properties"]["values"]["items"]["type"], "number");
  EXPECT_EQ(schema["properties"]["latency_ms"]["properties"]["camera"]["type"], "number");
  EXPECT_EQ(schema["properties"]["seq"]["type"], "integer");
  EXPECT_TRUE(skips.empty());
}

// Bad input is skipped and counted per topic and reason; the rest of the message converts.
TEST(Foxglove, WhatCannotBeShownIsSkippedAndCounted) {
  FoxgloveSkips skips;
  // An Image whose pixels do not match its encoding (as a damaged or foreign bag may hold).
  Message bad("Image", 1);
  bad.set_tensor("pixels", *Tensor::empty(DType::kF32, Shape{4, 4, 3}));
  bad.set_field("encoding", std::string("rgb8"));
  auto out = convert(bad, "/cam", skips);
  ASSERT_EQ(out.size(), 1u);  // the plot only
  EXPECT_EQ(out[0].topic, "/cam/plot");
  ASSERT_EQ(skips.size(), 1u);
  EXPECT_NE(skips.begin()->first.find("/cam: image pixels are f32 [4,4,3]"), std::string::npos) << skips.begin()->first;
  (void)convert(bad, "/cam", skips);
  EXPECT_EQ(skips.begin()->second, 2u);

  // rgbf32 frames and images without pixels.
  skips.clear();
  Message f = *msgs::Image::make(*Tensor::empty(DType::kF32, Shape{2, 2, 3}), "rgbf32", "c");
  EXPECT_EQ(convert(f, "/f", skips).size(), 1u);
  Message empty("Image", 1);
  EXPECT_EQ(convert(empty, "/e", skips).size(), 1u);
  EXPECT_EQ(skips.size(), 2u);

  // An Observation: the u8 camera becomes a frame, the f32 normalized one is skipped, a
  // rank-4 tensor and an oversized one are not plotted, NaN becomes null.
  skips.clear();
  Tensor state = *Tensor::empty(DType::kF32, Shape{3});
  state.data<float>()[0] = 1;
  state.data<float>()[1] = NAN;
  state.data<float>()[2] = INFINITY;
  Message obs = *msgs::Observation::make(state);
  obs.set_tensor("image.base", pattern(4, 6, 3));
  obs.set_tensor("image.wrist", *Tensor::empty(DType::kF32, Shape{3, 4, 4}));
  obs.set_tensor("cache", *Tensor::empty(DType::kF32, Shape{1, 2, 3, 4}));
  obs.set_tensor("big", *Tensor::empty(DType::kU8, Shape{5000}));
  out = convert(obs, "/obs", skips);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_NE(find(out, "/obs/image.base/compressed"), nullptr);
  EXPECT_EQ(json::parse(find(out, "/obs/image.base/compressed")->data)["frame_id"], "base");
  const json plot = json::parse(find(out, "/obs/plot")->data);
  EXPECT_EQ(plot["state"][0], 1.0);
  EXPECT_TRUE(plot["state"][1].is_null());
  EXPECT_TRUE(plot["state"][2].is_null());
  EXPECT_FALSE(plot.contains("cache"));
  EXPECT_FALSE(plot.contains("big"));
  EXPECT_FALSE(plot.contains("image_base"));
  EXPECT_FALSE(plot.contains("image_wrist"));
  std::vector<std::string> reasons;
  for (const auto& [why, n] : skips) reasons.push_back(why);
  ASSERT_EQ(reasons.size(), 4u) << ::testing::PrintToString(reasons);
  const auto has = [&](const std::string& text) {
    return std::any_of(reasons.begin(), reasons.end(), [&](const std::string& r) { return r.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("tensor 'image.wrist' is f32 [3,4,4], not a u8 [H, W, 3|1] frame"));
  EXPECT_TRUE(has("tensor 'cache' has rank 4"));
  EXPECT_TRUE(has("tensor 'big' has 5000 elements"));
  EXPECT_TRUE(has("NaN or infinite values"));
}

TEST(Foxglove, RecorderWritesFoxgloveChannelsBesideItsOwnAndPlayIgnoresThem) {
  BusOptions bo;
  bo.domain = testing::unique_domain("foxrec");
  auto bus = std::move(*Bus::create(bo));
  const std::string path = temp_path("rec.mcap");
  RecorderOptions o;
  o.output = path;
  o.topics = {"/cam", "/act", "/obs"};
  o.lossless = true;
  o.foxglove = true;
  auto rec = Recorder::start(*bus, o);
  ASSERT_TRUE(rec.has_value()) << rec.status().to_string();
  auto cam = *bus->advertise("/cam", "Image", "camera");
  auto act = *bus->advertise("/act", "ActionChunk", "head");
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(bus->publish(*cam, *msgs::Image::make(gradient(16, 16), "rgb8", "base")).is_ok());
    ASSERT_TRUE(bus->publish(*act, *msgs::ActionChunk::make(zeros(DType::kF32, Shape{4, 2}), 0.02)).is_ok());
  }
  ASSERT_TRUE(testing::eventually([&] { return (*rec)->stats().written == 20; }));
  EXPECT_EQ((*rec)->stats().foxglove_skipped, 0u);
  // A normalized f32 camera tensor has no picture: skipped, counted, and noted in the bag.
  Tensor state = zeros(DType::kF32, Shape{2});
  Message obs = *msgs::Observation::make(state);
  obs.set_tensor("image.wrist", zeros(DType::kF32, Shape{3, 4, 4}));
  auto ob = *bus->advertise("/obs", "Observation", "preprocess");
  ASSERT_TRUE(bus->publish(*ob, std::move(obs)).is_ok());
  ASSERT_TRUE((*rec)->stop().is_ok());
  const auto st = (*rec)->stats();
  EXPECT_EQ(st.written, 21u);
  EXPECT_EQ(st.foxglove_written, 31u);  // a frame and a plot per image, a plot per chunk and observation
  EXPECT_EQ(st.foxglove_skipped, 1u);
  auto r = std::move(*mcap::McapReader::open(path));
  std::map<std::string, std::string> encodings;
  for (const auto& [id, ch] : r->summary().channels) encodings[ch.topic] = ch.message_encoding;
  EXPECT_EQ(encodings, (std::map<std::string, std::string>{{"/act", "msgpack"},
                                                            {"/act/plot", "json"},
                                                            {"/cam", "msgpack"},
                                                            {"/cam/compressed", "json"},
                                                            {"/cam/plot", "json"},
                                                            {"/obs", "msgpack"},
                                                            {"/obs/plot", "json"}}));
  bool noted = false;
  for (const auto& md : r->metadata()) {
    if (md.name != "edgevla.foxglove_skipped") continue;
    ASSERT_EQ(md.metadata.size(), 1u);
    EXPECT_NE(md.metadata.begin()->first.find("/obs: tensor 'image.wrist'"), std::string::npos);
    EXPECT_EQ(md.metadata.begin()->second, "1");
    noted = true;
  }
  EXPECT_TRUE(noted);
  // Playing the bag publishes the edgevla messages only, and nothing is undecodable.
  auto play_bus = std::move(*Bus::create(bo));
  auto stats = play(*play_bus, path, PlayOptions{.rate = 1000.0});
  ASSERT_TRUE(stats.has_value()) << stats.status().to_string();
  EXPECT_EQ(stats->published, 21u);
  EXPECT_EQ(stats->undecodable, 0u);
  fs::remove(path);
}

// The option as a launch file's `record:` section or `bag record --foxglove` sets it: params
// of the bag_recorder node.
TEST(Foxglove, RecorderNodeParamsChooseTheFoxgloveView) {
  BusOptions bo;
  bo.domain = testing::unique_domain("foxnode");
  auto bus = std::move(*Bus::create(bo));
  const std::string path = temp_path("node.mcap");
  const auto recorder = [&](const std::string& images) {
    NodeOptions n;
    n.name = "recorder";
    n.type = "bag_recorder";
    n.origin = "test";
    n.params["output"] = ParamOverride{YAML::Load("\"" + path + "\""), "test"};
    n.params["topics"] = ParamOverride{YAML::Load("[/cam]"), "test"};
    n.params["lossless"] = ParamOverride{YAML::Load("true"), "test"};
    n.params["foxglove"] = ParamOverride{YAML::Load("true"), "test"};
    n.params["foxglove_images"] = ParamOverride{YAML::Load(images), "test"};
    return n;
  };
  {
    NodeHost host(*bus);
    auto bad = host.add(recorder("webp"));
    ASSERT_FALSE(bad.has_value());
    EXPECT_NE(bad.status().message().find("foxglove_images"), std::string::npos) << bad.status().message();
  }
  {
    NodeHost host(*bus);
    ASSERT_TRUE(host.add(recorder("raw")).has_value());
    ASSERT_TRUE(host.activate_all().is_ok());
    auto cam = *bus->advertise("/cam", "Image", "camera");
    ASSERT_TRUE(bus->publish(*cam, *msgs::Image::make(pattern(4, 4, 3), "rgb8", "base")).is_ok());
    ASSERT_TRUE(host.deactivate_all().is_ok());
    host.shutdown();
  }
  auto r = std::move(*mcap::McapReader::open(path));
  std::set<std::string> topics;
  for (const auto& [id, ch] : r->summary().channels) topics.insert(ch.topic);
  EXPECT_EQ(topics, (std::set<std::string>{"/cam", "/cam/raw", "/cam/plot"}));
  fs::remove(path);
}

void write_source(const std::string& path, bool camera) {
  auto w = std::move(*mcap::McapWriter::open(path));
  const auto put = [&](const std::string& topic, const Message& m) {
    const auto ch = w->add_channel(topic, kMessageEncoding, w->add_schema(m.type(), kSchemaEncoding, schema_text(m.type(), 1)),
                                   {{"edgevla.type", m.type()}, {"edgevla.type_version", "1"}});
    ASSERT_TRUE(w->write_message_with(ch, 1, 10, 10, [&](std::string& out) { return append_record(m, out); }).is_ok());
  };
  if (camera) put("/cam", *msgs::Image::make(pattern(4, 4, 3), "rgb8", "base"));
  put("/act", *msgs::ActionChunk::make(zeros(DType::kF32, Shape{2, 2}), 0.02));
  ASSERT_TRUE(w->write_metadata("edgevla.recording", {{"recorder", "edgevla"}}).is_ok());
  ASSERT_TRUE(w->close().is_ok());
}

TEST(Foxglove, ExportCopiesEverythingAndAddsTheViews) {
  const std::string in = temp_path("in.mcap"), out = temp_path("out.mcap");
  write_source(in, true);
  auto st = export_foxglove(in, out, {});
  ASSERT_TRUE(st.has_value()) << st.status().to_string();
  EXPECT_EQ(st->copied, 2u);
  EXPECT_EQ(st->derived, 3u);
  EXPECT_EQ(st->image_topics, std::vector<std::string>{"/cam/compressed"});
  auto r = std::move(*mcap::McapReader::open(out));
  EXPECT_EQ(r->summary().statistics.message_count, 5u);
  EXPECT_EQ(r->metadata().size(), 1u);
  // Exporting the export makes the views anew rather than doubling them.
  const std::string again = temp_path("again.mcap");
  auto st2 = export_foxglove(out, again, {});
  ASSERT_TRUE(st2.has_value());
  EXPECT_EQ(st2->copied, 2u);
  EXPECT_EQ(std::move(*mcap::McapReader::open(again))->summary().statistics.message_count, 5u);
  for (const auto& p : {in, out, again}) fs::remove(p);
}

TEST(Foxglove, ExportOfABagWithoutCameraMakesPlotsOnly) {
  const std::string in = temp_path("nocam.mcap"), out = temp_path("nocam_out.mcap");
  write_source(in, false);
  auto st = export_foxglove(in, out, {});
  ASSERT_TRUE(st.has_value()) << st.status().to_string();
  EXPECT_TRUE(st->image_topics.empty());
  EXPECT_EQ(st->derived, 1u);
  for (const auto& p : {in, out}) fs::remove(p);
}

TEST(Foxglove, ExportErrorsNameTheProblem) {
  const std::string in = temp_path("src.mcap");
  write_source(in, true);
  auto same = export_foxglove(in, in, {});
  ASSERT_FALSE(same.has_value());
  EXPECT_NE(same.status().message().find("is the input"), std::string::npos);
  auto missing = export_foxglove(temp_path("absent.mcap"), temp_path("x.mcap"), {});
  EXPECT_FALSE(missing.has_value());
  // A bag of another tool's channels only: nothing to convert.
  const std::string foreign = temp_path("foreign.mcap");
  {
    auto w = std::move(*mcap::McapWriter::open(foreign));
    const auto ch = w->add_channel("/x", "json", 0);
    ASSERT_TRUE(w->write_message(ch, 1, 1, 1, std::as_bytes(std::span(std::string_view("{}")))).is_ok());
    ASSERT_TRUE(w->close().is_ok());
  }
  const std::string out = temp_path("never.mcap");
  auto none = export_foxglove(foreign, out, {});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("no edgevla channels"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
  for (const auto& p : {in, foreign}) fs::remove(p);
}

}  // namespace
}  // namespace edgevla::bag
