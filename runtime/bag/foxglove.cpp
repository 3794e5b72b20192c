#include "runtime/bag/foxglove.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <png.h>

#include <nlohmann/json.hpp>

#include "runtime/bag/bag_codec.hpp"
#include "runtime/bag/mcap_reader.hpp"
#include "runtime/util/progress.hpp"

namespace edgevla::bag {
namespace {

using nlohmann::ordered_json;

constexpr const char* kCompressedImage = "foxglove.CompressedImage";
constexpr const char* kRawImage = "foxglove.RawImage";

// Foxglove's image schemas (the properties and required fields of @foxglove/schemas'
// jsonschema; tests/mcap_js checks them against that package).
constexpr const char* kTimeSchema =
    R"({"type":"object","title":"time","properties":{"sec":{"type":"integer","minimum":0},)"
    R"("nsec":{"type":"integer","minimum":0,"maximum":999999999}},"description":"Capture time of the frame"})";

const std::string& compressed_image_schema() {
  static const std::string s = std::string(R"({"title":"foxglove.CompressedImage","description":"A compressed camera frame",)") +
                               R"("type":"object","properties":{"timestamp":)" + kTimeSchema +
                               R"(,"frame_id":{"type":"string","description":"The camera"},)"
                               R"("data":{"type":"string","contentEncoding":"base64","description":"The encoded image"},)"
                               R"("format":{"type":"string","description":"jpeg or png"}},)"
                               R"("required":["timestamp","frame_id","data","format"]})";
  return s;
}

const std::string& raw_image_schema() {
  static const std::string s = std::string(R"({"title":"foxglove.RawImage","description":"A camera frame, uncompressed",)") +
                               R"("type":"object","properties":{"timestamp":)" + kTimeSchema +
                               R"(,"frame_id":{"type":"string","description":"The camera"},)"
                               R"("width":{"type":"integer","minimum":0},"height":{"type":"integer","minimum":0},)"
                               R"("encoding":{"type":"string","description":"rgb8, bgr8, rgba8, mono8 or mono16"},)"
                               R"("step":{"type":"integer","minimum":0,"description":"Bytes per row"},)"
                               R"("data":{"type":"string","contentEncoding":"base64","description":"The pixels, row by row"}},)"
                               R"("required":["timestamp","frame_id","width","height","encoding","step","data"]})";
  return s;
}

// Message-path friendly: Foxglove splits paths at '.', so keys keep [A-Za-z0-9_] only.
std::string path_key(std::string_view name) {
  std::string k(name);
  for (char& c : k) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  }
  return k.empty() ? "_" : k;
}

ordered_json time_json(std::int64_t ns) {
  if (ns < 0) ns = 0;
  return ordered_json{{"sec", ns / 1'000'000'000}, {"nsec", ns % 1'000'000'000}};
}

// A host copy of `t`, contiguous; device tensors copied off the device.
Expected<Tensor> host_contiguous(const Tensor& t) {
  if (!t.device().is_cpu()) return t.to(Device::cpu());
  if (!t.is_contiguous()) return t.contiguous();
  return t;
}

int channels_of(std::string_view encoding) {
  if (encoding == "rgb8" || encoding == "bgr8" || encoding == "rgbf32") return 3;
  if (encoding == "rgba8") return 4;
  if (encoding == "mono8" || encoding == "mono16") return 1;
  return 0;
}

// Checks pixels against the encoding they claim; the message says what is wrong.
Status check_pixels(const Tensor& px, std::string_view encoding) {
  const int c = channels_of(encoding);
  if (c == 0 || encoding == "rgbf32") {
    return invalid_argument("image encoding '" + std::string(encoding) +
                            "' has no Foxglove image encoding (rgb8, bgr8, rgba8, mono8 and mono16 have)");
  }
  const DType want = encoding == "mono16" ? DType::kU16 : DType::kU8;
  if (px.rank() != 3 || px.shape()[2] != c || px.dtype() != want || px.shape()[0] <= 0 || px.shape()[1] <= 0) {
    return invalid_argument("image pixels are " + std::string(dtype_name(px.dtype())) + " " + px.shape().to_string() +
                            ", but encoding '" + std::string(encoding) + "' needs " + std::string(dtype_name(want)) +
                            " [H, W, " + std::to_string(c) + "]");
  }
  if (px.shape()[0] > 65535 || px.shape()[1] > 65535) {
    return invalid_argument("image " + px.shape().to_string() + " is larger than 65535 pixels on a side");
  }
  return Status::ok();
}

// libjpeg reports fatal errors through error_exit, which must not return: it longjmps back
// into run_jpeg_encode(). Nothing with a destructor lives in that frame, so the jump skips none.
struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void on_jpeg_message(j_common_ptr, int) {}  // an encoder's warnings change nothing written

bool run_jpeg_encode(jpeg_compress_struct* cinfo, JpegError* err, const std::uint8_t* pixels, int width, int height,
                     int components, J_COLOR_SPACE space, int quality, unsigned char** out, unsigned long* size) {
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(cinfo);
    return false;
  }
  jpeg_create_compress(cinfo);
  jpeg_mem_dest(cinfo, out, size);
  cinfo->image_width = static_cast<JDIMENSION>(width);
  cinfo->image_height = static_cast<JDIMENSION>(height);
  cinfo->input_components = components;
  cinfo->in_color_space = space;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, quality, TRUE);
  jpeg_start_compress(cinfo, TRUE);
  const std::size_t row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(components);
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + row_bytes * cinfo->next_scanline);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  jpeg_destroy_compress(cinfo);
  return true;
}

Expected<FoxgloveMessage> image_message(const Tensor& pixels, std::string encoding, const std::string& frame_id,
                                        std::int64_t stamp_ns, const std::string& topic, const FoxgloveOptions& o) {
  auto px = host_contiguous(pixels);
  if (!px) return px.status();
  EDGEVLA_RETURN_IF_ERROR(check_pixels(*px, encoding));
  FoxgloveImages how = o.images;
  if (encoding == "mono16" && how == FoxgloveImages::kJpeg) how = FoxgloveImages::kPng;  // jpeg holds 8 bits
  FoxgloveMessage m;
  ordered_json head{{"timestamp", time_json(stamp_ns)}, {"frame_id", frame_id}};
  std::string_view bytes;
  std::string encoded;
  if (how == FoxgloveImages::kRaw) {
    m.topic = topic + "/raw";
    m.schema_name = kRawImage;
    const auto h = px->shape()[0], w = px->shape()[1];
    head["width"] = w;
    head["height"] = h;
    head["encoding"] = encoding;
    head["step"] = static_cast<std::int64_t>(px->nbytes()) / h;
    bytes = {reinterpret_cast<const char*>(px->raw_data()), px->nbytes()};
  } else {
    auto e = how == FoxgloveImages::kJpeg ? encode_jpeg(*px, encoding, o.jpeg_quality) : encode_png(*px, encoding);
    if (!e) return e.status();
    encoded = std::move(*e);
    m.topic = topic + "/compressed";
    m.schema_name = kCompressedImage;
    head["format"] = how == FoxgloveImages::kJpeg ? "jpeg" : "png";
    bytes = encoded;
  }
  // The pixels go in as base64 text straight after the small fields: no JSON value of megabytes.
  m.data = head.dump();
  m.data.pop_back();  // the closing brace
  m.data += R"(,"data":")";
  m.data += base64_encode({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  m.data += "\"}";
  return m;
}

// A tensor's elements as JSON numbers (booleans 0/1); NaN and infinities become null.
ordered_json element(const std::byte* p, DType d) {
  switch (d) {
    case DType::kBool: return *reinterpret_cast<const std::uint8_t*>(p) != 0 ? 1 : 0;
    case DType::kU8: return *reinterpret_cast<const std::uint8_t*>(p);
    case DType::kI8: return *reinterpret_cast<const std::int8_t*>(p);
    case DType::kU16: return *reinterpret_cast<const std::uint16_t*>(p);
    case DType::kI16: return *reinterpret_cast<const std::int16_t*>(p);
    case DType::kU32: return *reinterpret_cast<const std::uint32_t*>(p);
    case DType::kI32: return *reinterpret_cast<const std::int32_t*>(p);
    case DType::kU64: return *reinterpret_cast<const std::uint64_t*>(p);
    case DType::kI64: return *reinterpret_cast<const std::int64_t*>(p);
    case DType::kF16: return half_to_float(*reinterpret_cast<const std::uint16_t*>(p));
    case DType::kBF16: return bfloat16_to_float(*reinterpret_cast<const std::uint16_t*>(p));
    case DType::kF32: return *reinterpret_cast<const float*>(p);
    case DType::kF64: return *reinterpret_cast<const double*>(p);
  }
  return nullptr;
}

bool finite(const ordered_json& v) { return !v.is_number_float() || std::isfinite(v.get<double>()); }

// Rank 0: a number; rank 1: an array; rank 2: rows of {"values": [...]} (Foxglove's paths index
// an array, then a field). Higher ranks are not plotted. Counts non-finite elements in *bad.
Expected<ordered_json> tensor_json(const Tensor& t, std::uint64_t* bad) {
  auto c = host_contiguous(t);
  if (!c) return c.status();
  const std::byte* p = c->raw_data();
  const std::size_t step = dtype_size(c->dtype());
  const auto next = [&] {
    ordered_json v = element(p, c->dtype());
    p += step;
    if (!finite(v)) {
      ++*bad;
      return ordered_json(nullptr);
    }
    return v;
  };
  if (c->rank() == 0) return next();
  if (c->rank() == 1) {
    ordered_json a = ordered_json::array();
    for (std::int64_t i = 0; i < c->shape()[0]; ++i) a.push_back(next());
    return a;
  }
  ordered_json rows = ordered_json::array();
  for (std::int64_t r = 0; r < c->shape()[0]; ++r) {
    ordered_json a = ordered_json::array();
    for (std::int64_t i = 0; i < c->shape()[1]; ++i) a.push_back(next());
    rows.push_back(ordered_json{{"values", std::move(a)}});
  }
  return rows;
}

// A tensor that is a camera frame by name and layout: image.<camera> u8 [H, W, 3|1].
bool is_camera_tensor(const NamedTensor& t) {
  return t.name.starts_with("image.") && t.tensor.rank() == 3;
}

ordered_json schema_of(const ordered_json& v, std::string_view key) {
  if (v.is_object()) {
    ordered_json props = ordered_json::object();
    for (const auto& [k, x] : v.items()) props[k] = schema_of(x, k);
    ordered_json s{{"type", "object"}};
    if (key == "timestamp") s["title"] = "time";  // Foxglove reads {sec, nsec} titled "time" as a time
    s["properties"] = std::move(props);
    return s;
  }
  if (v.is_array()) return ordered_json{{"type", "array"}, {"items", v.empty() ? ordered_json::object() : schema_of(v[0], "")}};
  if (v.is_boolean()) return ordered_json{{"type", "boolean"}};
  if (v.is_string()) return ordered_json{{"type", "string"}};
  if (v.is_number_integer()) return ordered_json{{"type", "integer"}};
  return ordered_json{{"type", "number"}};  // numbers, and null where a number was not finite
}

}  // namespace

Expected<FoxgloveImages> parse_foxglove_images(std::string_view name) {
  if (name == "jpeg") return FoxgloveImages::kJpeg;
  if (name == "png") return FoxgloveImages::kPng;
  if (name == "raw") return FoxgloveImages::kRaw;
  return invalid_argument("Foxglove image format '" + std::string(name) +
                          "' is unknown: use jpeg (foxglove.CompressedImage, smallest), png (CompressedImage, "
                          "lossless) or raw (foxglove.RawImage)");
}

std::string base64_encode(std::span<const std::byte> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out((bytes.size() + 2) / 3 * 4, '=');
  std::size_t i = 0;
  char* o = out.data();
  const auto b = [&](std::size_t k) { return static_cast<std::uint32_t>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3, o += 4) {
    const std::uint32_t v = b(i) << 16 | b(i + 1) << 8 | b(i + 2);
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    o[2] = kAlphabet[(v >> 6) & 63];
    o[3] = kAlphabet[v & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {  // one or two bytes: padded with '='
    const std::uint32_t v = b(i) << 16 | (left == 2 ? b(i + 1) << 8 : 0);
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    if (left == 2) o[2] = kAlphabet[(v >> 6) & 63];
  }
  return out;
}

Expected<std::string> encode_jpeg(const Tensor& pixels, std::string_view encoding, int quality) {
  if (quality < 1 || quality > 100) {
    return invalid_argument("jpeg quality " + std::to_string(quality) + " is out of range (1..100)");
  }
  if (encoding == "mono16") return invalid_argument("jpeg holds 8-bit pixels; encode mono16 frames as png");
  EDGEVLA_RETURN_IF_ERROR(check_pixels(pixels, encoding));
  auto px = host_contiguous(pixels);
  if (!px) return px.status();
  const J_COLOR_SPACE space = encoding == "rgb8"    ? JCS_RGB
                              : encoding == "bgr8"  ? JCS_EXT_BGR
                              : encoding == "rgba8" ? JCS_EXT_RGBA
                                                    : JCS_GRAYSCALE;
  jpeg_compress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_jpeg_error;
  err.mgr.emit_message = on_jpeg_message;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool ok = run_jpeg_encode(&cinfo, &err, px->data<std::uint8_t>(), static_cast<int>(px->shape()[1]),
                                  static_cast<int>(px->shape()[0]), static_cast<int>(px->shape()[2]), space, quality,
                                  &buffer, &size);
  std::string out;
  if (ok) out.assign(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  if (!ok) return internal_error(std::string("jpeg encoding of a ") + px->shape().to_string() + " frame failed: " + err.message);
  return out;
}

Expected<std::string> encode_png(const Tensor& pixels, std::string_view encoding) {
  EDGEVLA_RETURN_IF_ERROR(check_pixels(pixels, encoding));
  auto px = host_contiguous(pixels);
  if (!px) return px.status();
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(px->shape()[1]);
  image.height = static_cast<png_uint_32>(px->shape()[0]);
  image.format = encoding == "rgb8"    ? PNG_FORMAT_RGB
                 : encoding == "bgr8"  ? PNG_FORMAT_BGR
                 : encoding == "rgba8" ? PNG_FORMAT_RGBA
                 : encoding == "mono8" ? PNG_FORMAT_GRAY
                                       : PNG_FORMAT_LINEAR_Y;  // mono16: 16-bit samples, written as they are
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, px->raw_data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    return internal_error("png encoding of a " + px->shape().to_string() + " frame failed: " + why);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, px->raw_data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    return internal_error("png encoding of a " + px->shape().to_string() + " frame failed: " + why);
  }
  out.resize(size);
  return out;
}

void to_foxglove(const Message& m, const std::string& topic, const FoxgloveOptions& o,
                 std::vector<FoxgloveMessage>& out, FoxgloveSkips& skips) {
  const auto skip = [&](const std::string& why) { ++skips[topic + ": " + why]; };
  const Header& h = m.header();
  const std::int64_t capture_ns = h.source_stamp_ns > 0 ? h.source_stamp_ns : h.publish_stamp_ns;

  // Camera frames.
  if (m.type() == "Image") {
    const Tensor* px = m.tensor("pixels");
    const auto enc = m.string_field("encoding");
    const auto cam = m.string_field("camera");
    if (px == nullptr || !enc) {
      skip("Image without 'pixels' or 'encoding': no frame written");
    } else {
      auto f = image_message(*px, *enc, cam ? *cam : topic, capture_ns, topic, o);
      if (f) {
        out.push_back(std::move(*f));
      } else {
        skip(f.status().message() + ": no frame written");
      }
    }
  }
  for (const auto& t : m.tensors()) {
    if (!is_camera_tensor(t) || m.type() == "Image") continue;
    const auto c = t.tensor.shape()[2];
    if (t.tensor.dtype() != DType::kU8 || (c != 3 && c != 1)) {
      skip("tensor '" + t.name + "' is " + std::string(dtype_name(t.tensor.dtype())) + " " +
           t.tensor.shape().to_string() + ", not a u8 [H, W, 3|1] frame (the model's normalized input?): "
           "no frame written; record the camera's own topic to see its pictures");
      continue;
    }
    auto f = image_message(t.tensor, c == 3 ? "rgb8" : "mono8", t.name.substr(6), capture_ns, topic + "/" + t.name, o);
    if (f) {
      out.push_back(std::move(*f));
    } else {
      skip(f.status().message() + ": no frame written for '" + t.name + "'");
    }
  }

  // The numbers.
  ordered_json j{{"timestamp", time_json(h.publish_stamp_ns)}, {"seq", h.seq}};
  const auto put = [&](const std::string& name, ordered_json v, const char* what) {
    const std::string key = path_key(name);
    if (j.contains(key)) {
      skip(std::string(what) + " '" + name + "' has the same plot key '" + key + "' as another: not plotted");
      return;
    }
    j[key] = std::move(v);
  };
  for (const auto& [name, value] : m.fields()) {
    std::visit([&](const auto& v) { put(name, ordered_json(v), "field"); }, value);
  }
  std::uint64_t non_finite = 0;
  for (const auto& t : m.tensors()) {
    if (m.type() == "Image" && t.name == "pixels") continue;
    if (is_camera_tensor(t)) continue;
    if (t.tensor.rank() > 2) {
      skip("tensor '" + t.name + "' has rank " + std::to_string(t.tensor.rank()) + " (plots take rank 0-2): not plotted");
      continue;
    }
    if (t.tensor.numel() > o.max_plot_elements) {
      skip("tensor '" + t.name + "' has " + std::to_string(t.tensor.numel()) + " elements (over " +
           std::to_string(o.max_plot_elements) + "): not plotted");
      continue;
    }
    auto v = tensor_json(t.tensor, &non_finite);
    if (!v) {
      skip("tensor '" + t.name + "': " + v.status().message());
      continue;
    }
    put(t.name, std::move(*v), "tensor");
  }
  if (non_finite > 0) skip("NaN or infinite values: written as null");
  if (h.source_stamp_ns > 0) {
    ordered_json lat{{"capture_to_publish", static_cast<double>(h.publish_stamp_ns - h.source_stamp_ns) / 1e6}};
    for (const auto& hop : h.trace) {
      lat[path_key(hop.node)] = static_cast<double>(hop.stamp_ns - h.source_stamp_ns) / 1e6;
    }
    put("latency_ms", std::move(lat), "latency");
  }
  out.push_back({topic + "/plot", "edgevla.plot." + path_key(m.type()), j.dump()});
}

std::string foxglove_schema(const FoxgloveMessage& m) {
  if (m.schema_name == kCompressedImage) return compressed_image_schema();
  if (m.schema_name == kRawImage) return raw_image_schema();
  const ordered_json j = ordered_json::parse(m.data, nullptr, false);
  ordered_json s = schema_of(j, "");
  ordered_json titled{{"title", m.schema_name}};
  for (auto& [k, v] : s.items()) titled[k] = std::move(v);
  return titled.dump();
}

Status FoxgloveWriter::write(const Message& message, const std::string& topic, std::uint32_t sequence,
                             std::uint64_t log_time, std::uint64_t publish_time) {
  scratch_.clear();
  to_foxglove(message, topic, options_, scratch_, skips_);
  for (const auto& f : scratch_) {
    auto it = channels_.find(f.topic);
    if (it == channels_.end()) {
      const auto schema = writer_.add_schema(f.schema_name, kFoxgloveSchemaEncoding, foxglove_schema(f));
      it = channels_.emplace(f.topic, writer_.add_channel(f.topic, kFoxgloveMessageEncoding, schema, {{kDerivedFromKey, topic}}))
               .first;
    }
    EDGEVLA_RETURN_IF_ERROR(writer_.write_message(
        it->second, sequence, log_time, publish_time, {reinterpret_cast<const std::byte*>(f.data.data()), f.data.size()}));
    ++written_;
  }
  return Status::ok();
}

std::vector<std::string> FoxgloveWriter::topics() const {
  std::vector<std::string> out;
  for (const auto& [t, id] : channels_) out.push_back(t);
  return out;
}

Expected<ExportStats> export_foxglove(const std::string& in, const std::string& out, const FoxgloveOptions& options) {
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec)) {
    return invalid_argument("bag export: the output '" + out + "' is the input; name a new file");
  }
  auto r = mcap::McapReader::open(in);
  if (!r) return r.status();
  bool any = false;
  for (const auto& [id, ch] : (*r)->summary().channels) {
    any = any || (ch.message_encoding == kMessageEncoding && !ch.metadata.contains(kDerivedFromKey));
  }
  if (!any && !(*r)->summary().channels.empty()) {
    return invalid_argument("bag export: '" + in + "' has no edgevla channels (message encoding '" +
                            std::string(kMessageEncoding) + "'), so nothing to convert");
  }
  if ((*r)->summary().channels.empty()) {
    return invalid_argument("bag export: '" + in + "' has no channels (an empty recording?); nothing to convert");
  }
  auto w = mcap::McapWriter::open(out);
  if (!w) return w.status();
  FoxgloveWriter fox(**w, options);
  ExportStats stats;
  std::map<std::uint16_t, std::uint16_t> channel_map;
  ProgressOptions po;
  po.what = "bag export " + out;
  po.unit = ProgressUnit::kCount;
  po.noun = "messages";
  // The summary's count (a bag cut short has none: then the total is unknown).
  if ((*r)->summary().has_summary) po.total = static_cast<std::int64_t>((*r)->summary().statistics.message_count);
  Progress progress(std::move(po));
  Status s = (*r)->for_each_message([&](const mcap::MessageView& v) -> Status {
    progress.add(1);
    // Channels a previous export derived are written anew from their sources, not copied.
    if (v.channel->metadata.contains(kDerivedFromKey)) return Status::ok();
    const std::uint16_t channel = mcap::copy_channel(**w, v, channel_map);
    EDGEVLA_RETURN_IF_ERROR(
        (*w)->write_message(channel, v.record.sequence, v.record.log_time, v.record.publish_time, v.record.data));
    ++stats.copied;
    if (v.channel->message_encoding != kMessageEncoding) return Status::ok();
    auto m = decode_record(v);
    if (!m) {
      ++stats.undecodable;
      return Status::ok();
    }
    return fox.write(*m, v.channel->topic, v.record.sequence, v.record.log_time, v.record.publish_time);
  });
  progress.finish();
  if (!s.is_ok()) return s.with_context("bag export to '" + out + "'");
  for (const auto& i : (*r)->issues()) stats.issues.push_back("at byte " + std::to_string(i.offset) + ": " + i.message);
  for (const auto& m : (*r)->metadata()) EDGEVLA_RETURN_IF_ERROR((*w)->write_metadata(m.name, m.metadata));
  for (const auto& a : (*r)->attachments()) {
    EDGEVLA_RETURN_IF_ERROR((*w)->write_attachment(a.record.name, a.record.media_type, a.record.log_time, a.record.data));
  }
  EDGEVLA_RETURN_IF_ERROR((*w)->close());
  stats.derived = fox.written();
  stats.skips = fox.skips();
  for (const auto& t : fox.topics()) {
    if (t.ends_with("/compressed") || t.ends_with("/raw")) stats.image_topics.push_back(t);
  }
  return stats;
}

}  // namespace edgevla::bag
