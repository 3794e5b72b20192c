// camera: one camera of the robot. Publishes msgs::Image (rgb8, u8 [H, W, 3]) on "image"
// with the `camera` param as the Image's camera name and a "frame" counter, from one of three
// sources: a synthetic moving pattern with the frame number drawn in, a folder of PNG/JPEG
// files, or a V4L2 device (MJPEG or YUYV). Pixels are written straight into a loaned
// (shared-memory) buffer, so no transport copies them. The header's source stamp is the
// capture time: the driver's buffer stamp for V4L2 when it is on the monotonic clock and
// recent, otherwise the node's clock at capture.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nodes/camera/image_files.hpp"
#include "nodes/camera/v4l2_source.hpp"
#include "runtime/node/node.hpp"

namespace edgevla::nodes {

class CameraNode final : public Node {
 public:
  explicit CameraNode(const NodeOptions& options);
  ~CameraNode() override;
  Status configure(NodeSpec& spec) override;
  Status activate() override;
  Status deactivate() override;

  // The frame stamp of the synthetic source: kStampDigits decimal digits of (frame mod 10^8),
  // 7-segment, white (255) on a black plate at the top-left corner. With u = stamp_unit(w, h)
  // pixels per unit, digit i occupies the box at (u * (kStampMargin + i * kStampPitch),
  // u * kStampMargin), 5u wide and 9u tall; its segments are u thick: a top, b upper right,
  // c lower right, d bottom, e lower left, f upper left, g middle.
  static constexpr int kStampDigits = 8;
  static constexpr int kStampMargin = 2;
  static constexpr int kStampPitch = 7;
  // Pixels per stamp unit for an image of this size (about a third of the width); 0 when the
  // image is too small to hold the stamp, which is then left out.
  static int stamp_unit(int width, int height);
  // Draws synthetic frame `frame` (gradient, moving square, stamp) into packed rgb8 `rgb`.
  static void draw_synthetic(std::int64_t frame, int width, int height,
                             std::span<std::uint8_t> rgb);

 private:
  void on_tick();
  void tick_v4l2();
  // Loans a [height, width, 3] u8 tensor; a failure is also reported as a bad input.
  Expected<Tensor> loan(int width, int height);
  void publish(Tensor pixels, std::int64_t capture_ns);
  bool done() const { return *max_frames_ > 0 && frame_ >= *max_frames_; }

  // clang-format off
  // Read-only params are used at configure/activate only.
  Param<std::string> source_{"source", "synthetic",
      {"where frames come from", {}, {}, {"synthetic", "files", "v4l2"}, true}};
  Param<std::string> camera_{"camera", "base_0_rgb", {"camera name written into each Image"}};
  Param<double> rate_hz_{"rate_hz", 30.0,
      {"frames per second (synthetic, files: timer; v4l2: asked of the driver)",
       0.1, 1000.0, {}, true}};
  Param<int> width_{"width", 0,
      {"image width; 0: the source's own (synthetic: 640); files and v4l2 must give it",
       0, 16384, {}, true}};
  Param<int> height_{"height", 0,
      {"image height; 0: the source's own (synthetic: 480)", 0, 16384, {}, true}};
  Param<std::string> path_{"path", "",
      {"files: folder of .png/.jpg/.jpeg images, played in name order", {}, {}, {}, true}};
  Param<bool> loop_{"loop", true, {"files: start again after the last file (false: stop there)"}};
  Param<int> max_cache_mb_{"max_cache_mb", 2048,
      {"files: the decoded images must fit in this many MiB", 1, 1 << 20, {}, true}};
  Param<std::string> device_{"device", "/dev/video0",
      {"v4l2: the capture device", {}, {}, {}, true}};
  Param<std::string> pixel_format_{"pixel_format", "mjpeg",
      {"v4l2: format asked of the device", {}, {}, {"mjpeg", "yuyv"}, true}};
  Param<std::int64_t> max_frames_{"max_frames", 0,
      {"stop after this many frames (0: never)", 0.0, {}}};
  // clang-format on
  Publisher<msgs::Image> image_;

  std::int64_t frame_ = 0;
  // files: every image decoded at activate(), published in turn.
  std::vector<std::string> files_;
  std::vector<RgbImage> images_;
  bool files_done_logged_ = false;
  // v4l2: the open device, and when it last gave a frame (steady clock) for the stall report.
  std::unique_ptr<V4l2Camera> v4l2_;
  std::int64_t last_frame_steady_ns_ = 0;
  std::int64_t last_stall_report_s_ = 0;
  Status last_v4l2_error_;
};

}  // namespace edgevla::nodes
