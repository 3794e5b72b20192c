#include "nodes/camera/v4l2_source.hpp"

#include <fcntl.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "nodes/camera/image_files.hpp"

namespace edgevla::nodes {
namespace {

int xioctl(int fd, unsigned long request, void* arg) {
  int r;
  do {
    r = ::ioctl(fd, request, arg);
  } while (r == -1 && errno == EINTR);
  return r;
}

std::string fourcc_text(std::uint32_t f) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((f >> (8 * i)) & 0xff);
    if (c != ' ') s += c;
  }
  return s;
}

std::string size_text(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

std::uint8_t clamp_u8(int v) { return static_cast<std::uint8_t>(std::clamp(v, 0, 255)); }

}  // namespace

void yuyv_to_rgb(std::span<const std::uint8_t> yuyv, int width, int height, int stride,
                 std::span<std::uint8_t> rgb) {
  // Integer BT.601 (limited range): R = 1.164 (Y-16) + 1.596 (V-128), G = 1.164 (Y-16) -
  // 0.392 (U-128) - 0.813 (V-128), B = 1.164 (Y-16) + 2.017 (U-128), in 8.8 fixed point.
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* s = yuyv.data() + static_cast<std::size_t>(stride) * y;
    std::uint8_t* d = rgb.data() + static_cast<std::size_t>(width) * 3 * y;
    for (int x = 0; x < width; x += 2, s += 4) {
      const int u = s[1] - 128;
      const int v = s[3] - 128;
      const int r = 409 * v + 128;
      const int g = -100 * u - 208 * v + 128;
      const int b = 516 * u + 128;
      for (int k = 0; k < 2 && x + k < width; ++k, d += 3) {
        const int c = 298 * (s[2 * k] - 16);
        d[0] = clamp_u8((c + r) >> 8);
        d[1] = clamp_u8((c + g) >> 8);
        d[2] = clamp_u8((c + b) >> 8);
      }
    }
  }
}

Expected<std::unique_ptr<V4l2Camera>> V4l2Camera::open(const V4l2Options& options) {
  std::unique_ptr<V4l2Camera> cam(new V4l2Camera(options));
  const std::string& dev = options.device;
  // What the path is decides the message: a missing device, a file given by mistake, or a
  // device we may not open.
  struct stat st {};
  if (::stat(dev.c_str(), &st) == 0 && !S_ISCHR(st.st_mode)) {
    return invalid_argument("'" + dev + "' is not a device but a " +
                            (S_ISREG(st.st_mode)   ? "regular file"
                             : S_ISDIR(st.st_mode) ? "directory"
                                                   : "special file") +
                            "; set param 'device' to a V4L2 camera such as /dev/video0");
  }
  cam->fd_ = ::open(dev.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (cam->fd_ < 0) {
    const int e = errno;
    if (e == ENOENT) {
      return not_found("camera device '" + dev +
                       "' does not exist; check the camera is plugged in, " +
                       "list cameras with `ls /dev/video*` and set param 'device'");
    }
    if (e == EACCES || e == EPERM) {
      return failed_precondition(
          "no permission to open camera device '" + dev + "'; add the user to " +
          "group 'video' (`sudo usermod -aG video $USER`, then log in again)");
    }
    if (e == EBUSY) {
      return unavailable("camera device '" + dev + "' is busy; another program holds it " +
                         "(find it with `fuser " + dev + "`)");
    }
    return unavailable("cannot open camera device '" + dev + "': " + std::strerror(e));
  }
  v4l2_capability cap{};
  if (xioctl(cam->fd_, VIDIOC_QUERYCAP, &cap) < 0) {
    const int e = errno;
    return invalid_argument("'" + dev + "' is not a V4L2 video device (VIDIOC_QUERYCAP: " +
                            std::strerror(e) + "); set param 'device' to a camera's /dev/videoN " +
                            "(`v4l2-ctl --list-devices` lists them)");
  }
  const auto* card = reinterpret_cast<const char*>(cap.card);
  cam->card_.assign(card, ::strnlen(card, sizeof(cap.card)));
  const std::uint32_t caps =
      (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
  const std::string who = "'" + dev + "' (" + cam->card_ + ")";
  if ((caps & V4L2_CAP_VIDEO_CAPTURE) == 0) {
    return invalid_argument(who + " is not a single-plane video capture device" +
                            ((caps & V4L2_CAP_VIDEO_CAPTURE_MPLANE)
                                 ? " (it is multi-planar, which this node does not support)"
                                 : " (a camera often has a second, metadata-only /dev/videoN)") +
                            "; set param 'device' to the camera's capture node");
  }
  if ((caps & V4L2_CAP_STREAMING) == 0) {
    return invalid_argument(who + " does not support streaming I/O, which this node needs");
  }
  EDGEVLA_RETURN_IF_ERROR(cam->start());
  return cam;
}

Status V4l2Camera::ioctl_error(const char* request, int err) const {
  const std::string where =
      "camera device '" + options_.device + "' (" + card_ + "): " + request + ": ";
  if (err == EBUSY) {
    return unavailable(where + "device busy; another program is using it (find it with `fuser " +
                       options_.device + "`)");
  }
  if (err == ENOSPC) {
    return resource_exhausted(where + "not enough USB bandwidth; lower width/height/rate_hz, use " +
                              "pixel_format mjpeg, or move cameras to different USB controllers");
  }
  if (err == ENODEV) return unavailable(where + "the device is gone (unplugged?)");
  return unavailable(where + std::strerror(err));
}

Status V4l2Camera::start() {
  // mjpeg is MJPG, or JPEG on some older drivers: the same frames for the decoder.
  const bool yuyv = options_.pixel_format == "yuyv";
  std::uint32_t want = yuyv ? V4L2_PIX_FMT_YUYV : V4L2_PIX_FMT_MJPEG;
  const std::string who = "camera device '" + options_.device + "' (" + card_ + ")";
  std::vector<std::string> offered;
  bool found = false;
  for (std::uint32_t i = 0;; ++i) {
    v4l2_fmtdesc d{};
    d.index = i;
    d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd_, VIDIOC_ENUM_FMT, &d) < 0) break;
    offered.push_back(fourcc_text(d.pixelformat));
    if (found) continue;
    found = d.pixelformat == want || (!yuyv && d.pixelformat == V4L2_PIX_FMT_JPEG);
    if (found) want = d.pixelformat;
  }
  if (!found) {
    std::string list;
    for (const auto& f : offered) list += (list.empty() ? "" : ", ") + f;
    return invalid_argument(
        who + " does not offer pixel_format '" + options_.pixel_format + "' (" + fourcc_text(want) +
        "); it offers: " + (list.empty() ? "nothing" : list) + ". Set param 'pixel_format' to " +
        (yuyv ? "mjpeg" : "yuyv") + " if it is offered");
  }

  v4l2_format fmt{};
  fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  if (xioctl(fd_, VIDIOC_G_FMT, &fmt) < 0) return ioctl_error("VIDIOC_G_FMT", errno);
  if (options_.width > 0) fmt.fmt.pix.width = static_cast<std::uint32_t>(options_.width);
  if (options_.height > 0) fmt.fmt.pix.height = static_cast<std::uint32_t>(options_.height);
  fmt.fmt.pix.pixelformat = want;
  fmt.fmt.pix.field = V4L2_FIELD_ANY;
  if (xioctl(fd_, VIDIOC_S_FMT, &fmt) < 0) return ioctl_error("VIDIOC_S_FMT", errno);
  width_ = static_cast<int>(fmt.fmt.pix.width);
  height_ = static_cast<int>(fmt.fmt.pix.height);
  bytes_per_line_ = static_cast<int>(fmt.fmt.pix.bytesperline);
  fourcc_ = fmt.fmt.pix.pixelformat;
  if (fourcc_ != want) {
    return invalid_argument(who + " switched pixel format " + fourcc_text(want) + " to " +
                            fourcc_text(fourcc_) + "; set param 'pixel_format' to one it keeps");
  }
  if ((options_.width > 0 && width_ != options_.width) ||
      (options_.height > 0 && height_ != options_.height)) {
    return invalid_argument(who + " gives " + size_text(width_, height_) + " for the requested " +
                            size_text(options_.width, options_.height) + " (" +
                            options_.pixel_format + "); pick a size it supports (`v4l2-ctl -d " +
                            options_.device + " --list-formats-ext`) or set width and height to 0");
  }
  if (yuyv && bytes_per_line_ < ((width_ + 1) / 2) * 4) bytes_per_line_ = ((width_ + 1) / 2) * 4;

  // The frame rate is a request: drivers round it or ignore it, and that is not an error.
  v4l2_streamparm parm{};
  parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  if (xioctl(fd_, VIDIOC_G_PARM, &parm) == 0 &&
      (parm.parm.capture.capability & V4L2_CAP_TIMEPERFRAME)) {
    parm.parm.capture.timeperframe.numerator = 1000;
    parm.parm.capture.timeperframe.denominator =
        static_cast<std::uint32_t>(std::lround(options_.rate_hz * 1000));
    (void)xioctl(fd_, VIDIOC_S_PARM, &parm);
  }

  v4l2_requestbuffers req{};
  req.count = static_cast<std::uint32_t>(options_.buffers);
  req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  req.memory = V4L2_MEMORY_MMAP;
  if (xioctl(fd_, VIDIOC_REQBUFS, &req) < 0) return ioctl_error("VIDIOC_REQBUFS", errno);
  if (req.count < 2) {
    return resource_exhausted(who + ": the driver granted " + std::to_string(req.count) +
                              " buffer(s), at least 2 are needed");
  }
  for (std::uint32_t i = 0; i < req.count; ++i) {
    v4l2_buffer b{};
    b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b.memory = V4L2_MEMORY_MMAP;
    b.index = i;
    if (xioctl(fd_, VIDIOC_QUERYBUF, &b) < 0) return ioctl_error("VIDIOC_QUERYBUF", errno);
    void* p = ::mmap(nullptr, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, b.m.offset);
    if (p == MAP_FAILED) return ioctl_error("mmap", errno);
    buffers_.push_back({p, b.length});
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    EDGEVLA_RETURN_IF_ERROR(queue(static_cast<int>(i)));
  }
  v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  if (xioctl(fd_, VIDIOC_STREAMON, &type) < 0) return ioctl_error("VIDIOC_STREAMON", errno);
  streaming_ = true;
  return Status::ok();
}

V4l2Camera::~V4l2Camera() {
  if (fd_ < 0) return;
  if (streaming_) {
    v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    (void)xioctl(fd_, VIDIOC_STREAMOFF, &type);
  }
  for (const Mapping& m : buffers_) ::munmap(m.start, m.length);
  if (!buffers_.empty()) {
    v4l2_requestbuffers req{};
    req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    req.memory = V4L2_MEMORY_MMAP;
    (void)xioctl(fd_, VIDIOC_REQBUFS, &req);  // count 0 frees the driver's buffers
  }
  ::close(fd_);
}

Status V4l2Camera::queue(int index) {
  v4l2_buffer b{};
  b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  b.memory = V4L2_MEMORY_MMAP;
  b.index = static_cast<std::uint32_t>(index);
  if (xioctl(fd_, VIDIOC_QBUF, &b) < 0) return ioctl_error("VIDIOC_QBUF", errno);
  return Status::ok();
}

Expected<std::optional<V4l2Grab>> V4l2Camera::grab() {
  std::optional<V4l2Grab> newest;
  for (;;) {
    v4l2_buffer b{};
    b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b.memory = V4L2_MEMORY_MMAP;
    if (xioctl(fd_, VIDIOC_DQBUF, &b) < 0) {
      if (errno == EAGAIN) break;
      const Status s = ioctl_error("VIDIOC_DQBUF", errno);
      if (newest) (void)requeue(*newest);
      return s;
    }
    if (newest) EDGEVLA_RETURN_IF_ERROR(requeue(*newest));
    V4l2Grab g;
    g.index = static_cast<int>(b.index);
    const Mapping& m = buffers_[b.index];
    g.bytes = {static_cast<const std::uint8_t*>(m.start),
               std::min<std::size_t>(b.bytesused, m.length)};
    if ((b.flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) == V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) {
      g.monotonic_ns = static_cast<std::int64_t>(b.timestamp.tv_sec) * 1'000'000'000 +
                       static_cast<std::int64_t>(b.timestamp.tv_usec) * 1000;
    }
    g.sequence = b.sequence;
    g.corrupt = (b.flags & V4L2_BUF_FLAG_ERROR) != 0;
    newest = g;
  }
  return newest;
}

Status V4l2Camera::to_rgb(const V4l2Grab& grab, std::span<std::uint8_t> rgb) const {
  if (fourcc_ != V4L2_PIX_FMT_YUYV) {
    return decode_jpeg_into(grab.bytes, width_, height_, rgb, JpegWarnings::kTolerate,
                            options_.device + " frame " + std::to_string(grab.sequence));
  }
  const std::size_t need =
      static_cast<std::size_t>(bytes_per_line_) * (height_ - 1) + ((width_ + 1) / 2) * 4;
  if (grab.bytes.size() < need) {
    return data_loss(options_.device + " frame " + std::to_string(grab.sequence) +
                     ": YUYV frame of " + std::to_string(grab.bytes.size()) +
                     " bytes is short of " + std::to_string(need));
  }
  yuyv_to_rgb(grab.bytes, width_, height_, bytes_per_line_, rgb);
  return Status::ok();
}

Status V4l2Camera::requeue(const V4l2Grab& grab) { return queue(grab.index); }

}  // namespace edgevla::nodes
