#include "nodes/camera/camera_node.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/node/node_registry.hpp"

namespace edgevla::nodes {
namespace {

// How often the v4l2 source looks for a new frame (a non-blocking VIDIOC_DQBUF). It bounds the
// delay a frame waits before it is published; the capture stamp is the driver's regardless.
constexpr std::chrono::milliseconds kV4l2PollPeriod{2};
constexpr int kSyntheticWidth = 640;
constexpr int kSyntheticHeight = 480;

std::string size_text(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

// Segments a..g of a 7-segment digit in stamp units: x0, y0, x1, y1 (exclusive).
constexpr int kSegments[7][4] = {{0, 0, 5, 1}, {4, 0, 5, 5}, {4, 4, 5, 9}, {0, 8, 5, 9},
                                 {0, 4, 1, 9}, {0, 0, 1, 5}, {0, 4, 5, 5}};
// Which segments (bit 0 = a ... bit 6 = g) each decimal digit lights.
constexpr std::uint8_t kDigitSegments[10] = {0x3f, 0x06, 0x5b, 0x4f, 0x66,
                                             0x6d, 0x7d, 0x07, 0x7f, 0x6f};
constexpr int kStampWidthUnits =
    CameraNode::kStampMargin + CameraNode::kStampDigits * CameraNode::kStampPitch;
constexpr int kStampHeightUnits = 2 * CameraNode::kStampMargin + 9;

void fill_rect(std::span<std::uint8_t> rgb, int width, int x0, int y0, int x1, int y1,
               std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  for (int y = y0; y < y1; ++y) {
    std::uint8_t* p = rgb.data() + (static_cast<std::size_t>(y) * width + x0) * 3;
    for (int x = x0; x < x1; ++x, p += 3) {
      p[0] = r;
      p[1] = g;
      p[2] = b;
    }
  }
}

// Position along [0, range] bouncing back and forth as t grows.
int bounce(std::int64_t t, int range) {
  if (range <= 0) return 0;
  const std::int64_t m = t % (2 * static_cast<std::int64_t>(range));
  return static_cast<int>(m <= range ? m : 2 * range - m);
}

}  // namespace

CameraNode::CameraNode(const NodeOptions& options) : Node(options) {}
CameraNode::~CameraNode() = default;

int CameraNode::stamp_unit(int width, int height) {
  const int u = std::max(1, width / (3 * kStampWidthUnits));
  return kStampWidthUnits * u <= width && kStampHeightUnits * u <= height ? u : 0;
}

void CameraNode::draw_synthetic(std::int64_t frame, int width, int height,
                                std::span<std::uint8_t> rgb) {
  // A gradient (red across, green down, blue with time) ...
  const auto blue = static_cast<std::uint8_t>((frame * 2) & 0xff);
  for (int y = 0; y < height; ++y) {
    std::uint8_t* p = rgb.data() + static_cast<std::size_t>(y) * width * 3;
    const auto green = static_cast<std::uint8_t>(y * 255 / std::max(1, height - 1));
    for (int x = 0; x < width; ++x, p += 3) {
      p[0] = static_cast<std::uint8_t>(x * 255 / std::max(1, width - 1));
      p[1] = green;
      p[2] = blue;
    }
  }
  // ... a magenta square bouncing around ...
  const int side = std::max(1, std::min(width, height) / 5);
  const int sx = bounce(frame * 5, width - side);
  const int sy = bounce(frame * 3, height - side);
  fill_rect(rgb, width, sx, sy, sx + side, sy + side, 255, 0, 255);
  // ... and the frame number, on top.
  const int u = stamp_unit(width, height);
  if (u == 0) return;
  fill_rect(rgb, width, 0, 0, kStampWidthUnits * u, kStampHeightUnits * u, 0, 0, 0);
  std::int64_t value = frame % 100'000'000;
  for (int i = kStampDigits - 1; i >= 0; --i, value /= 10) {
    const int dx = u * (kStampMargin + i * kStampPitch);
    const int dy = u * kStampMargin;
    const std::uint8_t lit = kDigitSegments[value % 10];
    for (int s = 0; s < 7; ++s) {
      if ((lit & (1 << s)) == 0) continue;
      const int* r = kSegments[s];
      fill_rect(rgb, width, dx + r[0] * u, dy + r[1] * u, dx + r[2] * u, dy + r[3] * u, 255, 255,
                255);
    }
  }
}

Status CameraNode::configure(NodeSpec& spec) {
  EDGEVLA_RETURN_IF_ERROR(spec.declare(source_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(camera_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(rate_hz_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(width_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(height_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(path_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(loop_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(max_cache_mb_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(device_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(pixel_format_));
  EDGEVLA_RETURN_IF_ERROR(spec.declare(max_frames_));
  if (*source_ == "files" && path_->empty()) {
    return invalid_argument("node '" + name() +
                            "': source 'files' needs param 'path' (a folder of PNG/JPEG images)");
  }
  if (*source_ == "v4l2" && device_->empty()) {
    return invalid_argument("node '" + name() +
                            "': source 'v4l2' needs param 'device' (e.g. /dev/video0)");
  }
  EDGEVLA_ASSIGN_OR_RETURN(image_, spec.publisher<msgs::Image>("image"));
  const auto period = *source_ == "v4l2"
                          ? std::chrono::nanoseconds(kV4l2PollPeriod)
                          : std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / *rate_hz_));
  return spec.timer("capture", period, [this] { on_tick(); });
}

Status CameraNode::activate() {
  frame_ = 0;
  files_done_logged_ = false;
  const std::string node = "node '" + name() + "'";
  if (*source_ == "files") {
    // Every file is decoded now: a bad or mis-sized file stops activation with its name, and
    // ticks only copy pixels, so the frame rate never depends on decode time.
    auto files = list_image_files(*path_);
    if (!files) return files.status().with_context(node);
    const std::uint64_t budget = static_cast<std::uint64_t>(*max_cache_mb_) << 20;
    std::uint64_t total = 0;
    for (const std::string& f : *files) {
      auto img = decode_image_file(f);
      if (!img) return img.status().with_context(node);
      if ((*width_ > 0 && img->width != *width_) || (*height_ > 0 && img->height != *height_)) {
        const std::string want = *width_ > 0 && *height_ > 0 ? size_text(*width_, *height_)
                                 : *width_ > 0               ? "width " + std::to_string(*width_)
                                                             : "height " + std::to_string(*height_);
        return invalid_argument(
            node + ": '" + f + "' is " + size_text(img->width, img->height) +
            " but params width/height ask for " + want +
            "; set width and height to 0 to take the files' size (resizing is the " +
            "preprocess node's job)");
      }
      if (!images_.empty() &&
          (img->width != images_[0].width || img->height != images_[0].height)) {
        return invalid_argument(node + ": '" + f + "' is " + size_text(img->width, img->height) +
                                " but '" + files_[0] + "' is " +
                                size_text(images_[0].width, images_[0].height) +
                                "; a camera's frames must all have one size");
      }
      total += img->pixels.size();
      if (total > budget) {
        return resource_exhausted(
            node + ": the images in '" + *path_ +
            "' decode to more than max_cache_mb = " + std::to_string(*max_cache_mb_) +
            " MiB (reached at '" + f + "'); raise max_cache_mb or use fewer files");
      }
      files_.push_back(f);
      images_.push_back(std::move(*img));
    }
    log().info("node '{}': {} image(s) of {} from {}", name(), images_.size(),
               size_text(images_[0].width, images_[0].height), *path_);
  } else if (*source_ == "v4l2") {
    V4l2Options o;
    o.device = *device_;
    o.pixel_format = *pixel_format_;
    o.width = *width_;
    o.height = *height_;
    o.rate_hz = *rate_hz_;
    auto cam = V4l2Camera::open(o);
    if (!cam) return cam.status().with_context(node);
    v4l2_ = std::move(*cam);
    last_frame_steady_ns_ = steady_now_ns();
    last_stall_report_s_ = 0;
    last_v4l2_error_ = Status::ok();
    log().info("node '{}': capturing {} from {} ({})", name(),
               size_text(v4l2_->width(), v4l2_->height()), *device_, v4l2_->card());
  }
  return Status::ok();
}

Status CameraNode::deactivate() {
  v4l2_.reset();  // stops streaming; the timer has already stopped
  files_.clear();
  images_.clear();
  return Status::ok();
}

Expected<Tensor> CameraNode::loan(int width, int height) {
  auto pixels = image_.loan(DType::kU8, Shape{height, width, 3});
  if (!pixels) report_bad_input("loan", pixels.status());
  return pixels;
}

void CameraNode::publish(Tensor pixels, std::int64_t capture_ns) {
  auto msg = msgs::Image::make(std::move(pixels), "rgb8", *camera_);
  if (!msg) {
    report_bad_input("image", msg.status());
    return;
  }
  msg->set_field("frame", frame_);
  msg->header().source_stamp_ns = capture_ns;
  if (Status s = image_.publish(std::move(*msg)); !s.is_ok()) {
    report_bad_input("publish", s);
    return;
  }
  ++frame_;
}

void CameraNode::on_tick() {
  if (done()) return;
  if (v4l2_) {
    tick_v4l2();
    return;
  }
  const std::int64_t capture_ns = now_ns();
  if (*source_ == "synthetic") {
    const int w = *width_ > 0 ? *width_ : kSyntheticWidth;
    const int h = *height_ > 0 ? *height_ : kSyntheticHeight;
    auto pixels = loan(w, h);
    if (!pixels) return;
    draw_synthetic(frame_, w, h, {pixels->data<std::uint8_t>(), pixels->nbytes()});
    publish(std::move(*pixels), capture_ns);
    return;
  }
  if (images_.empty()) return;
  if (!*loop_ && frame_ >= static_cast<std::int64_t>(images_.size())) {
    if (!files_done_logged_) {
      log().info("node '{}': played all {} file(s) of {}", name(), images_.size(), *path_);
      files_done_logged_ = true;
    }
    return;
  }
  const RgbImage& img = images_[static_cast<std::size_t>(frame_) % images_.size()];
  auto pixels = loan(img.width, img.height);
  if (!pixels) return;
  std::memcpy(pixels->raw_data(), img.pixels.data(), img.pixels.size());
  publish(std::move(*pixels), capture_ns);
}

void CameraNode::tick_v4l2() {
  auto grabbed = v4l2_->grab();
  const std::int64_t steady = steady_now_ns();
  if (!grabbed || !grabbed->has_value()) {
    if (!grabbed) last_v4l2_error_ = grabbed.status();
    // Stalled (or failing): say so once per second of silence, and keep polling.
    const std::int64_t silent_s = (steady - last_frame_steady_ns_) / 1'000'000'000;
    if (silent_s >= 1 && silent_s > last_stall_report_s_) {
      last_stall_report_s_ = silent_s;
      std::string why = "no frame from " + *device_ + " for " + std::to_string(silent_s) + " s";
      if (!last_v4l2_error_.is_ok()) why += " (last error: " + last_v4l2_error_.message() + ")";
      report_bad_input("no frame", unavailable(why));
    }
    return;
  }
  const V4l2Grab grab = **grabbed;
  last_frame_steady_ns_ = steady;
  last_stall_report_s_ = 0;
  last_v4l2_error_ = Status::ok();
  // The driver's stamp is taken at capture on CLOCK_MONOTONIC; move it onto the node's clock
  // by its age. A stamp on another clock, or implausibly old or new, is not trusted.
  std::int64_t capture_ns = now_ns();
  const std::int64_t age = steady - grab.monotonic_ns;
  if (grab.monotonic_ns >= 0 && age >= 0 && age < 1'000'000'000) capture_ns -= age;

  if (grab.corrupt) {
    report_bad_input("frame", data_loss(*device_ + ": the driver flagged frame " +
                                        std::to_string(grab.sequence) + " as corrupt"));
    if (Status s = v4l2_->requeue(grab); !s.is_ok()) report_bad_input("requeue", s);
    return;
  }
  auto pixels = loan(v4l2_->width(), v4l2_->height());
  const Status converted =
      pixels ? v4l2_->to_rgb(grab, {pixels->data<std::uint8_t>(), pixels->nbytes()})
             : pixels.status();
  if (Status s = v4l2_->requeue(grab); !s.is_ok()) report_bad_input("requeue", s);
  if (!pixels) return;  // loan() reported it
  if (!converted.is_ok()) {
    report_bad_input("frame", converted);
    return;
  }
  publish(std::move(*pixels), capture_ns);
}

EDGEVLA_REGISTER_NODE(
    CameraNode, "camera",
    "publishes rgb8 Images from a synthetic pattern, a folder of PNG/JPEG files or a V4L2 camera");

}  // namespace edgevla::nodes
