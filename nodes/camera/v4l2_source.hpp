// A V4L2 video capture device with memory-mapped streaming buffers, read without blocking:
// the camera node polls it from its own timer, so nothing here ever waits for the camera.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla::nodes {

struct V4l2Options {
  std::string device = "/dev/video0";
  std::string pixel_format = "mjpeg";  // mjpeg or yuyv
  int width = 0;                       // 0 (both): keep the device's current size
  int height = 0;
  double rate_hz = 30.0;  // asked of the driver, which may round or ignore it
  int buffers = 4;
};

// One dequeued buffer; hand it back with V4l2Camera::requeue().
struct V4l2Grab {
  int index = -1;
  std::span<const std::uint8_t> bytes;  // the frame as the device sent it (bytesused)
  std::int64_t monotonic_ns = -1;  // driver stamp on CLOCK_MONOTONIC; -1 if it uses another clock
  std::uint32_t sequence = 0;      // the driver's frame counter
  bool corrupt = false;            // the driver flagged the buffer (V4L2_BUF_FLAG_ERROR)
};

class V4l2Camera final {
 public:
  // Opens, checks and configures the device and starts streaming. Errors name the device,
  // what is wrong and what to do (plug it in, join group 'video', pick another format...).
  static Expected<std::unique_ptr<V4l2Camera>> open(const V4l2Options& options);
  ~V4l2Camera();  // stops streaming, unmaps the buffers, closes the device
  V4l2Camera(const V4l2Camera&) = delete;
  V4l2Camera& operator=(const V4l2Camera&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }
  const std::string& device() const { return options_.device; }
  const std::string& card() const { return card_; }

  // The newest frame ready now, or nullopt when none is (never blocks). Older ready frames are
  // requeued unpublished so a late reader publishes the freshest picture. An error
  // means the device failed (unplugged, I/O error); the caller may keep polling.
  Expected<std::optional<V4l2Grab>> grab();
  // Converts a grabbed frame (MJPEG or YUYV) to rgb8 in `rgb` (width * height * 3 bytes).
  Status to_rgb(const V4l2Grab& grab, std::span<std::uint8_t> rgb) const;
  // Gives the buffer back to the driver.
  Status requeue(const V4l2Grab& grab);

 private:
  struct Mapping {
    void* start = nullptr;
    std::size_t length = 0;
  };
  explicit V4l2Camera(V4l2Options options) : options_(std::move(options)) {}
  Status start();
  Status queue(int index);
  Status ioctl_error(const char* request, int err) const;

  V4l2Options options_;
  int fd_ = -1;
  std::string card_;
  std::uint32_t fourcc_ = 0;
  int width_ = 0;
  int height_ = 0;
  int bytes_per_line_ = 0;
  std::vector<Mapping> buffers_;
  bool streaming_ = false;
};

// YUYV 4:2:2 (Y0 U Y1 V per pixel pair, BT.601 limited range) to rgb8. `stride` is the
// bytes per source row (at least width * 2); width must be even.
void yuyv_to_rgb(std::span<const std::uint8_t> yuyv, int width, int height, int stride,
                 std::span<std::uint8_t> rgb);

}  // namespace edgevla::nodes
