// Writes the seed corpora of the fuzz targets other than the envelope's (make_corpus writes
// those): each seed is made by edgevla's own writers where one exists (McapWriter and the bag
// codec, write_safetensors, write_norm_stats) or written out here, small on purpose (a seed
// of a few KB mutates faster than a real file of MBs).
//
//   make_seeds <corpus dir> <repository root>
//
// writes <corpus dir>/<target>/seed_NNNN for target in mcap, safetensors, norm_stats,
// groot_processor, pi0_tokenizer, groot_tokenizer, image, control, launch.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <jpeglib.h>  // after <cstdio>: it needs FILE and size_t
#include <png.h>

#include "msgs/message.hpp"
#include "msgs/types.hpp"
#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_writer.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/model/pi0/norm_stats.hpp"
#include "runtime/model/safetensors.hpp"

namespace {

using namespace edgevla;
namespace fs = std::filesystem;
using Bytes = std::string;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_seeds: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status& s, const char* what) {
  if (!s.is_ok()) die(std::string(what) + ": " + s.to_string());
}

template <class T>
T must(Expected<T> e, const char* what) {
  if (!e) die(std::string(what) + ": " + e.status().to_string());
  return std::move(e).value();
}

Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) die("cannot read " + p.string());
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

struct Corpus {
  fs::path dir;
  int count = 0;
  Corpus(const fs::path& root, const std::string& target) : dir(root / target) { fs::create_directories(dir); }
  void add(const Bytes& bytes) {
    char name[32];
    std::snprintf(name, sizeof name, "seed_%04d", count++);
    std::ofstream out(dir / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) die("cannot write " + (dir / name).string());
  }
  // Several files of one input, joined by NUL (the launch, groot_processor and control
  // targets split their inputs so).
  void add_parts(const std::vector<Bytes>& parts) {
    Bytes joined;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) joined += '\0';
      joined += parts[i];
    }
    add(joined);
  }
};

Tensor floats(const Shape& shape, float start, float step) {
  Tensor t = must(Tensor::empty(DType::kF32, shape), "Tensor::empty");
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = start + step * static_cast<float>(i);
  return t;
}

Tensor bytes_pattern(const Shape& shape) {
  Tensor t = must(Tensor::empty(DType::kU8, shape), "Tensor::empty");
  auto b = t.mutable_bytes();
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>(i * 37 + 11);
  return t;
}

// ---- mcap ----------------------------------------------------------------------------------

// Zeroes every CRC (chunks, data end, summary), so mutated records are still read: a zero CRC
// means "not computed" in MCAP.
Bytes without_crcs(Bytes b) {
  auto u64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(b[at + i])) << (8 * i);
    return v;
  };
  std::size_t pos = 8;
  while (pos + 9 <= b.size()) {
    const auto op = static_cast<std::uint8_t>(b[pos]);
    const std::uint64_t len = u64(pos + 1);
    if (len > b.size() - pos - 9) break;
    const std::size_t content = pos + 9;
    if (op == 0x06 && len >= 28) std::memset(&b[content + 24], 0, 4);  // chunk uncompressed_crc
    if (op == 0x0F && len >= 4) std::memset(&b[content], 0, 4);        // data end crc
    if (op == 0x02 && len >= 20) std::memset(&b[content + 16], 0, 4);  // footer summary crc
    pos = content + len;
  }
  return b;
}

Bytes write_bag(const fs::path& scratch, mcap::Compression c, std::size_t chunk_size, int messages) {
  const fs::path path = scratch / "seed.mcap";
  mcap::McapWriterOptions o;
  o.compression = c;
  o.chunk_size = chunk_size;
  auto w = must(mcap::McapWriter::open(path.string(), o), "McapWriter::open");
  std::map<std::string, std::uint16_t> channels;
  auto channel = [&](const Message& m, const std::string& topic) {
    if (auto it = channels.find(topic); it != channels.end()) return it->second;
    const std::uint16_t schema =
        w->add_schema(m.type(), bag::kSchemaEncoding, bag::schema_text(m.type(), m.version()));
    const std::uint16_t id = w->add_channel(topic, bag::kMessageEncoding, schema,
                                            {{"edgevla.type", m.type()},
                                             {"edgevla.type_version", std::to_string(m.version())}});
    channels[topic] = id;
    return id;
  };
  for (int i = 0; i < messages; ++i) {
    Message m = i % 3 == 0 ? must(msgs::Image::make(bytes_pattern({4, 5, 3}), "rgb8", "wrist"), "Image::make")
                           : must(msgs::JointCommand::make(floats({7}, 0.1f * i, 0.01f)), "JointCommand::make");
    const std::string topic = i % 3 == 0 ? "camera/wrist" : "joints/command";
    m.header().topic = topic;
    m.header().seq = static_cast<std::uint64_t>(i + 1);
    m.header().source_stamp_ns = 1'000'000 * (i + 1);
    m.header().publish_stamp_ns = m.header().source_stamp_ns + 500;
    m.header().publisher = "robot/1/1";
    const std::uint16_t ch = channel(m, topic);
    const auto t = static_cast<std::uint64_t>(m.header().source_stamp_ns);
    check(w->write_message_with(ch, static_cast<std::uint32_t>(i), t, t,
                                [&](std::string& out) { return bag::append_record(m, out); }),
          "write_message_with");
    if (i == messages / 2) {
      check(w->write_metadata("run", {{"robot", "arm"}, {"site", "lab"}}), "write_metadata");
      const std::string note = "calibration";
      check(w->write_attachment("notes.txt", "text/plain", t, std::as_bytes(std::span(note))), "write_attachment");
    }
  }
  check(w->close(), "McapWriter::close");
  Bytes b = read_file(path);
  fs::remove(path);
  return b;
}

void mcap_seeds(Corpus& c, const fs::path& scratch) {
  for (auto comp : {mcap::Compression::kNone, mcap::Compression::kLz4, mcap::Compression::kZstd}) {
    const Bytes whole = write_bag(scratch, comp, 400, 7);
    c.add(whole);
    c.add(without_crcs(whole));
    // Cut short: inside the summary, inside the data, just after the magic.
    c.add(whole.substr(0, whole.size() - 10));
    c.add(without_crcs(whole).substr(0, whole.size() * 2 / 3));
    c.add(whole.substr(0, 40));
  }
  c.add(without_crcs(write_bag(scratch, mcap::Compression::kZstd, 1 << 20, 3)));  // one chunk
  c.add(Bytes("\x89MCAP0\r\n", 8));
}

// ---- safetensors ---------------------------------------------------------------------------

void safetensors_seeds(Corpus& c, const fs::path& scratch) {
  const fs::path path = scratch / "seed.safetensors";
  auto fill = [](const model::WriteEntry&, std::span<std::byte> out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 13 + 1);
    return Status::ok();
  };
  std::vector<model::WriteEntry> all;
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    if (model::safetensors_dtype_name(d) == "?") continue;
    all.push_back({"t." + std::string(dtype_name(d)), d, must(Shape::from(std::vector<std::int64_t>{2, 3}), "Shape")});
  }
  all.push_back({"scalar", DType::kF32, must(Shape::from(std::vector<std::int64_t>{}), "Shape")});
  all.push_back({"empty", DType::kBF16, must(Shape::from(std::vector<std::int64_t>{0, 4}), "Shape")});
  check(model::write_safetensors(path.string(), all, {{"format", "pt"}}, fill), "write_safetensors");
  c.add(read_file(path));
  check(model::write_safetensors(path.string(), {{"w", DType::kF32, must(Shape::from(std::vector<std::int64_t>{3}), "Shape")}}, {}, fill),
        "write_safetensors");
  c.add(read_file(path));
  fs::remove(path);
  auto raw = [&](const std::string& header, std::size_t data_bytes) {
    Bytes b(8, '\0');
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    c.add(b + header + Bytes(data_bytes, '\x01'));
  };
  raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4);    // truncated data
  raw(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1);  // unsupported dtype
  raw(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[1,3]}})", 3);    // misaligned
  raw(R"({"__metadata__":{"k":"v"},"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
  raw(R"({"a":{"dtype":"I64","shape":[-1],"data_offsets":[8,0]}})", 8);
  raw("[1,2,3]", 0);
}

// ---- norm stats ----------------------------------------------------------------------------

void norm_stats_seeds(Corpus& c, const fs::path& scratch) {
  const fs::path path = scratch / "norm_stats.json";
  model::NormStats s;
  s.state = {{0.1, -0.2, 0.3}, {1.0, 0.5, 2.0}, {-1.0, -2.0, -0.5}, {1.0, 2.0, 0.5}};
  s.actions = {{0.0, 0.5}, {0.1, 0.2}, {}, {}};
  check(model::write_norm_stats(s, path.string()), "write_norm_stats");
  c.add(read_file(path));
  s.actions.q01 = {-0.3, 0.1};
  s.actions.q99 = {0.3, 0.9};
  check(model::write_norm_stats(s, path.string()), "write_norm_stats");
  c.add(read_file(path));
  fs::remove(path);
  c.add(R"({"norm_stats":{"state":{"mean":[1],"std":[0]},"actions":{"mean":[1,2],"std":[3,4],"q01":null,"q99":null}},"extra":1})");
  c.add(R"({"norm_stats":{"state":{"mean":[1,2],"std":[1]},"actions":{"mean":[1],"std":[1]}}})");
  c.add(R"({"norm_stats":{"state":{"mean":[1e308],"std":[-1e308],"q01":[0]},"actions":{"mean":[NaN],"std":[1]}}})");
  c.add(R"({"norm_stats":{"state":{"mean":[],"std":[]}}})");
}

// ---- groot processor -----------------------------------------------------------------------

const char* kProcessor = R"({
  "processor_class": "Gr00tN1d6Processor",
  "processor_kwargs": {
    "modality_configs": {
      "new_embodiment": {
        "video": {"delta_indices": [0], "modality_keys": ["front", "wrist"]},
        "state": {"delta_indices": [0], "modality_keys": ["arm", "gripper", "base"],
                  "sin_cos_embedding_keys": ["arm"], "mean_std_embedding_keys": ["base"]},
        "action": {"delta_indices": [0, 1, 2, 3], "modality_keys": ["arm", "gripper", "eef"],
                   "mean_std_embedding_keys": ["gripper"],
                   "action_configs": [
                     {"rep": "RELATIVE", "type": "NON_EEF", "format": "DEFAULT", "state_key": null},
                     {"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT", "state_key": null},
                     {"rep": "RELATIVE", "type": "EEF", "format": "XYZ_ROT6D", "state_key": "pose"}]},
        "language": {"delta_indices": [0], "modality_keys": ["annotation.human.action.task_description"]}
      },
      "libero_panda": {
        "video": {"delta_indices": [0], "modality_keys": ["image"]},
        "state": {"delta_indices": [0], "modality_keys": ["joints"]},
        "action": {"delta_indices": [0, 1], "modality_keys": ["joints"],
                   "action_configs": [{"rep": "ABSOLUTE"}]}
      }
    },
    "use_albumentations": true, "shortest_image_edge": 256, "crop_fraction": 0.95,
    "formalize_language": true, "max_state_dim": 64, "max_action_dim": 32, "max_action_horizon": 16,
    "use_percentiles": false, "clip_outliers": true, "apply_sincos_state_encoding": true,
    "use_relative_action": true
  }
})";

const char* kStatistics = R"({
  "new_embodiment": {
    "state": {
      "arm": {"min": [-1, -2], "max": [1, 2], "mean": [0, 0], "std": [0.5, 1], "q01": [-0.9, -1.8], "q99": [0.9, 1.8]},
      "gripper": {"min": [0], "max": [1], "mean": [0.5], "std": [0.1]},
      "base": {"min": [-3], "max": [3], "mean": [0], "std": [0]},
      "pose": {"min": [0,0,0,0,0,0,0,0,0], "max": [1,1,1,1,1,1,1,1,1], "mean": [0,0,0,0,0,0,0,0,0], "std": [1,1,1,1,1,1,1,1,1]}
    },
    "action": {
      "arm": {"min": [-1, -1], "max": [1, 1], "mean": [0, 0], "std": [1, 1]},
      "gripper": {"min": [0], "max": [1], "mean": [0.5], "std": [0.2]},
      "eef": {"min": [0,0,0,0,0,0,0,0,0], "max": [1,1,1,1,1,1,1,1,1], "mean": [0,0,0,0,0,0,0,0,0], "std": [1,1,1,1,1,1,1,1,1]}
    },
    "relative_action": {
      "arm": {"min": [[-0.1, -0.1], [-0.2, -0.2], [-0.3, -0.3], [-0.4, -0.4]], "max": [[0.1, 0.1], [0.2, 0.2], [0.3, 0.3], [0.4, 0.4]],
              "mean": [[0, 0], [0, 0], [0, 0], [0, 0]], "std": [[1, 1], [1, 1], [1, 1], [1, 1]]},
      "eef": {"min": [[0,0,0,0,0,0,0,0,0]], "max": [[1,1,1,1,1,1,1,1,1]], "mean": [[0,0,0,0,0,0,0,0,0]], "std": [[1,1,1,1,1,1,1,1,1]]}
    }
  },
  "libero_panda": {
    "state": {"joints": {"min": [-1, -1, -1], "max": [1, 1, 1], "mean": [0, 0, 0], "std": [1, 1, 1]}},
    "action": {"joints": {"min": [-1, -1, -1], "max": [1, 1, 1], "mean": [0, 0, 0], "std": [1, 1, 1]}}
  }
})";

void groot_processor_seeds(Corpus& c) {
  c.add_parts({kProcessor, kStatistics, R"({"new_embodiment": 10, "libero_panda": 2})"});
  c.add_parts({kProcessor, kStatistics, ""});
  c.add_parts({kProcessor, R"({"new_embodiment": {"state": {}}})", R"({"robot": 4097})"});
  c.add_parts({R"({"processor_kwargs": {"modality_configs": {}}})", "{}", "[]"});
}

// ---- tokenizers ----------------------------------------------------------------------------

void pi0_tokenizer_seeds(Corpus& c) {
  auto seed = [&](std::uint8_t budget, const std::vector<double>& state, const std::string& prompt) {
    Bytes b;
    b += static_cast<char>(budget);
    b += static_cast<char>(state.size());
    for (double x : state) b.append(reinterpret_cast<const char*>(&x), sizeof x);
    c.add(b + prompt);
  };
  seed(47, {}, "pick up the red block");
  seed(47, {0.5, -0.25, 1.0, -1.0, 0.0, 0.999}, "put the cup in the sink");
  seed(5, {}, "  move_the arm\nto the left  ");
  seed(63, {-2.0, 3.0}, "\xe3\x80\x80open the drawer\xc2\xa0");
  seed(0, {}, "");
  seed(20, {1e-300, -0.0}, "fold the towel, then stack the plates on the shelf by the window");
  seed(63, {}, "caf\xc3\xa9 \xe6\x9c\xba\xe5\x99\xa8\xe4\xba\xba \xf0\x9f\xa4\x96 \xff\xfe");
}

void groot_tokenizer_seeds(Corpus& c) {
  c.add("pick up the apple and place it in the bowl");
  c.add("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nopen the drawer"
        "<image 1><img><IMG_CONTEXT><IMG_CONTEXT></img><|im_end|>\n");
  c.add("I'm sure it's the robot's; they'll've done it");
  c.add("  \t\n\n   spaces   and\r\nnewlines  ");
  c.add("\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xe4\xbd\xa0\xe5\xa5\xbd \xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7");
  c.add("e\xcc\x81\xcc\xa7 A\xcc\x8a \xef\xac\x81 \xe2\x84\xab 12345 3.14");
  c.add("bad \xc3\x28 utf8 \xed\xa0\x80 \xf4\x90\x80\x80");
  c.add("<|endoftext|><|endoftext|>x<|im_end");
}

// ---- images --------------------------------------------------------------------------------

Bytes encode_png(int w, int h, int color_type, int bit_depth, bool interlaced,
                 const std::vector<png_color>& palette = {}) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) die("png encoding failed");
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t n) {
        static_cast<Bytes*>(png_get_io_ptr(p))->append(reinterpret_cast<const char*>(data), n);
      },
      nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), bit_depth, color_type,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  png_write_info(png, info);
  const int channels = color_type == PNG_COLOR_TYPE_GRAY         ? 1
                       : color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                       : color_type == PNG_COLOR_TYPE_RGB        ? 3
                       : color_type == PNG_COLOR_TYPE_RGBA       ? 4
                                                                 : 1;
  const std::size_t stride = (static_cast<std::size_t>(w) * channels * bit_depth + 7) / 8;
  std::vector<std::uint8_t> rows(stride * h);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::uint8_t>(palette.empty() ? i * 29 : i % 4);
  std::vector<png_bytep> ptrs(static_cast<std::size_t>(h));
  for (int y = 0; y < h; ++y) ptrs[static_cast<std::size_t>(y)] = rows.data() + stride * y;
  png_write_image(png, ptrs.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

Bytes encode_jpeg(int w, int h, int components, bool progressive) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &mem, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 80, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<std::uint8_t> row(static_cast<std::size_t>(w * components));
  while (cinfo.next_scanline < cinfo.image_height) {
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<std::uint8_t>(i * 9 + cinfo.next_scanline * 17);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(reinterpret_cast<const char*>(mem), size);
  std::free(mem);
  return out;
}

void image_seeds(Corpus& c) {
  c.add(encode_png(5, 4, PNG_COLOR_TYPE_RGB, 8, false));
  c.add(encode_png(5, 4, PNG_COLOR_TYPE_RGBA, 8, false));
  c.add(encode_png(6, 3, PNG_COLOR_TYPE_GRAY, 8, false));
  c.add(encode_png(6, 3, PNG_COLOR_TYPE_GRAY, 1, false));
  c.add(encode_png(4, 4, PNG_COLOR_TYPE_GRAY_ALPHA, 16, false));
  c.add(encode_png(4, 4, PNG_COLOR_TYPE_RGB, 16, true));
  const Bytes pal = encode_png(7, 5, PNG_COLOR_TYPE_PALETTE, 2, false,
                               {{0, 0, 0}, {255, 0, 0}, {10, 200, 30}, {255, 255, 255}});
  c.add(pal);
  c.add(pal.substr(0, pal.size() / 2));
  const Bytes rgb = encode_jpeg(16, 8, 3, false);
  c.add(rgb);
  c.add(rgb.substr(0, rgb.size() * 3 / 4));
  c.add(encode_jpeg(9, 7, 1, false));
  c.add(encode_jpeg(12, 12, 3, true));
}

// ---- control -------------------------------------------------------------------------------

void control_seeds(Corpus& c) {
  const std::vector<std::pair<std::string, std::string>> sets = {
      {"enabled", "false"},      {"enabled", "yes"},          {"rate_hz", "30"},
      {"rate_hz", "1e9"},        {"gain", ".nan"},            {"gain", "-0.5e-3"},
      {"steps", "10"},           {"steps", "0x10"},           {"count32", "4294967296"},
      {"seed", "-9223372036854775808"}, {"mode", "blend"},    {"mode", "\"hold\""},
      {"label", "'a: b'"},       {"label", "|\n  two\n  lines"}, {"joints", "[0, 1, 62]"},
      {"joints", "- 3\n- 4"},    {"limits", "[-1.5, 2.5e2, .inf]"}, {"topics", "[a, \"b c\", 'd']"},
      {"topics", "{a: 1}"},      {"checkpoint", "/models/x"}, {"rate_hz", "[1, 2"},
      {"label", "&a [*a]"},      {"joints", "[]"},            {"unknown", "1"}};
  for (const auto& [key, value] : sets) c.add_parts({"set", "n\n" + key + "\n" + value});
  c.add_parts({"set", "m\nsteps\n3"});
  c.add_parts({"set", "n\nsteps"});
  c.add_parts({"params", "n"});
  c.add_parts({"nodes", ""});
  c.add_parts({"bogus", "x"});
}

// ---- launch --------------------------------------------------------------------------------

void launch_seeds(Corpus& c, const fs::path& repo) {
  // The repository's launch files, each with its params file where it names one as
  // params/<x>.yaml (relative names resolve inside the fuzzer's scratch folder, so they are
  // rewritten to params.yaml).
  for (const auto& e : fs::directory_iterator(repo / "launch")) {
    Bytes text = read_file(e.path());
    Bytes params;
    for (const char* p : {"../params/pi05.yaml", "../params/demo.yaml", "../params/pi05_cuda.yaml"}) {
      if (const auto at = text.find(p); at != Bytes::npos) {
        text.replace(at, std::strlen(p), "params.yaml");
        params = read_file(repo / "params" / fs::path(p).filename());
        break;
      }
    }
    if (text.size() + params.size() < 8192) c.add_parts({text, params});
  }
  c.add_parts({R"(include: [include.yaml]
params_files: [params.yaml]
groups:
  - name: robot
    respawn: true
    respawn_delay_s: 0.5
    max_respawns: 3
    required: false
    shm_pool_mb: 64
    spin_us: 50
    tcp_listen: "tcp://127.0.0.1:0"
    nodes:
      - name: cam
        type: camera
        namespace: robot
        params: {source: synthetic, rate_hz: ${RATE:-30}, size: [224, 224], label: "$$HOME"}
        remap: {image: /camera/front}
        qos: {state: "depth=1,keep_last"}
record:
  output: run.mcap
  topics: [/camera/front]
)",
               R"(cam:
  rate_hz: 15
  exposure: [1, 2.5, auto]
other:
  x: 1
)",
               R"(nodes:
  - name: act
    type: actuation
    params_files: [params.yaml]
    params: {rate_hz: 50}
)",
               "cam.rate_hz=60\nact.limits=[1, 2]"});
  c.add_parts({"nodes:\n  - {name: a, type: t}\n  - {name: a, type: t}\n"});
  c.add_parts({"include: [include.yaml]\n", "", "include: [launch.yaml]\n"});
  c.add_parts({"groups: [{name: g, nodes: [{name: n, type: t, params: {v: ${UNSET}}}]}]\n"});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <corpus dir> <repository root>\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path scratch = out / ".scratch";
  fs::create_directories(scratch);
  {
    Corpus c(out, "mcap");
    mcap_seeds(c, scratch);
  }
  {
    Corpus c(out, "safetensors");
    safetensors_seeds(c, scratch);
  }
  {
    Corpus c(out, "norm_stats");
    norm_stats_seeds(c, scratch);
  }
  Corpus gp(out, "groot_processor");
  groot_processor_seeds(gp);
  Corpus pt(out, "pi0_tokenizer");
  pi0_tokenizer_seeds(pt);
  Corpus gt(out, "groot_tokenizer");
  groot_tokenizer_seeds(gt);
  Corpus im(out, "image");
  image_seeds(im);
  Corpus ct(out, "control");
  control_seeds(ct);
  Corpus la(out, "launch");
  launch_seeds(la, argv[2]);
  fs::remove_all(scratch);
  std::printf("make_seeds: wrote the seed corpora under %s\n", out.c_str());
  return 0;
}
