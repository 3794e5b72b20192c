// The camera node's V4L2 path against a fake driver. No camera is attached where the suite
// runs, so this executable interposes ioctl(), mmap() and munmap(): calls on a descriptor
// open on /dev/zero (the "device" these tests name) go to FakeDriver, which implements the
// V4L2 streaming calls the node makes (QUERYCAP, ENUM_FMT, G/S_FMT, G/S_PARM, REQBUFS,
// QUERYBUF, QBUF, DQBUF, STREAMON/OFF); every other call goes to the C library. It is its own
// test executable so the interposition touches nothing else.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "nodes/camera/camera_node.hpp"
#include "tests/nodes/camera/camera_test_util.hpp"

namespace edgevla::nodes {
namespace {

using namespace camera_test;

constexpr const char* kDevice = "/dev/zero";
constexpr int kWidth = 64;
constexpr int kHeight = 48;

std::int64_t mono_now_ns() { return steady_now_ns(); }

struct FakeDriver {
  std::mutex mu;
  // Behaviour, set by a test before activation.
  std::vector<std::uint32_t> formats{V4L2_PIX_FMT_MJPEG, V4L2_PIX_FMT_YUYV};
  std::uint32_t caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
  int pad = 8;  // YUYV rows carry this many bytes of padding, as real drivers' may
  int s_fmt_errno = 0;
  int streamon_errno = 0;
  int dqbuf_errno = 0;
  bool monotonic_stamps = true;
  // State.
  std::uint32_t pixfmt = V4L2_PIX_FMT_YUYV;
  std::size_t buf_len = kWidth * kHeight * 3;
  std::vector<std::vector<std::uint8_t>> bufs;
  std::deque<int> queued;  // owned by the driver, waiting for a frame
  struct Ready {
    int index;
    std::uint32_t bytes;
    std::uint32_t sequence;
    std::int64_t mono_ns;
    bool error;
  };
  std::deque<Ready> ready;  // filled, waiting for DQBUF
  bool streaming = false;
  int stream_offs = 0;
  int mapped = 0;
  std::uint32_t sequence = 0;
  std::uint32_t stride() const { return pixfmt == V4L2_PIX_FMT_YUYV ? kWidth * 2 + pad : 0; }
  std::size_t page_len() const { return (buf_len + 4095) / 4096 * 4096; }

  // Fills queued buffers with `frames` at once; returns how many it could fill.
  int deliver(const std::vector<Bytes>& frames, std::int64_t age_ns = 20'000'000,
              bool error = false) {
    std::lock_guard lock(mu);
    int n = 0;
    for (const Bytes& f : frames) {
      if (!streaming || queued.empty()) break;
      const int i = queued.front();
      queued.pop_front();
      std::memcpy(bufs[i].data(), f.data(), std::min(f.size(), bufs[i].size()));
      ready.push_back(
          {i, static_cast<std::uint32_t>(f.size()), sequence++, mono_now_ns() - age_ns, error});
      ++n;
    }
    return n;
  }
  int deliver(const Bytes& frame, std::int64_t age_ns = 20'000'000, bool error = false) {
    return deliver(std::vector<Bytes>{frame}, age_ns, error);
  }
  std::size_t queued_count() {
    std::lock_guard lock(mu);
    return queued.size();
  }

  int fail(int e) {
    errno = e;
    return -1;
  }

  int ioctl(unsigned long request, void* arg) {
    std::lock_guard lock(mu);
    switch (request) {
      case VIDIOC_QUERYCAP: {
        auto* c = static_cast<v4l2_capability*>(arg);
        *c = {};
        std::strcpy(reinterpret_cast<char*>(c->driver), "fake");
        std::strcpy(reinterpret_cast<char*>(c->card), "Fake Camera");
        c->capabilities = caps | V4L2_CAP_DEVICE_CAPS;
        c->device_caps = caps;
        return 0;
      }
      case VIDIOC_ENUM_FMT: {
        auto* d = static_cast<v4l2_fmtdesc*>(arg);
        if (d->index >= formats.size()) return fail(EINVAL);
        d->pixelformat = formats[d->index];
        return 0;
      }
      case VIDIOC_S_FMT:
        if (s_fmt_errno != 0) return fail(s_fmt_errno);
        {
          // Like a driver with one size: it keeps kWidth x kHeight whatever is asked.
          const std::uint32_t want = static_cast<v4l2_format*>(arg)->fmt.pix.pixelformat;
          pixfmt =
              std::find(formats.begin(), formats.end(), want) != formats.end() ? want : formats[0];
        }
        [[fallthrough]];
      case VIDIOC_G_FMT: {
        auto& pix = static_cast<v4l2_format*>(arg)->fmt.pix;
        pix.width = kWidth;
        pix.height = kHeight;
        pix.pixelformat = pixfmt;
        pix.bytesperline = stride();
        pix.sizeimage = static_cast<std::uint32_t>(buf_len);
        return 0;
      }
      case VIDIOC_G_PARM:
        static_cast<v4l2_streamparm*>(arg)->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
        return 0;
      case VIDIOC_S_PARM:
        return 0;
      case VIDIOC_REQBUFS: {
        auto* r = static_cast<v4l2_requestbuffers*>(arg);
        if (streaming) return fail(EBUSY);
        bufs.assign(std::min<std::uint32_t>(r->count, 8), std::vector<std::uint8_t>(page_len()));
        r->count = static_cast<std::uint32_t>(bufs.size());
        queued.clear();
        ready.clear();
        return 0;
      }
      case VIDIOC_QUERYBUF: {
        auto* b = static_cast<v4l2_buffer*>(arg);
        if (b->index >= bufs.size()) return fail(EINVAL);
        b->length = static_cast<std::uint32_t>(buf_len);
        b->m.offset = static_cast<std::uint32_t>(b->index * page_len());
        return 0;
      }
      case VIDIOC_QBUF: {
        auto* b = static_cast<v4l2_buffer*>(arg);
        if (b->index >= bufs.size()) return fail(EINVAL);
        queued.push_back(static_cast<int>(b->index));
        return 0;
      }
      case VIDIOC_DQBUF: {
        if (dqbuf_errno != 0) return fail(dqbuf_errno);
        if (ready.empty()) return fail(EAGAIN);
        const Ready r = ready.front();
        ready.pop_front();
        auto* b = static_cast<v4l2_buffer*>(arg);
        b->index = static_cast<std::uint32_t>(r.index);
        b->bytesused = r.bytes;
        b->sequence = r.sequence;
        b->flags = (monotonic_stamps ? V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC
                                     : V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN) |
                   (r.error ? V4L2_BUF_FLAG_ERROR : 0);
        b->timestamp.tv_sec = r.mono_ns / 1'000'000'000;
        b->timestamp.tv_usec = (r.mono_ns % 1'000'000'000) / 1000;
        return 0;
      }
      case VIDIOC_STREAMON:
        if (streamon_errno != 0) return fail(streamon_errno);
        streaming = true;
        return 0;
      case VIDIOC_STREAMOFF:
        streaming = false;
        ++stream_offs;
        queued.clear();
        ready.clear();
        return 0;
      default:
        return fail(ENOTTY);
    }
  }

  void* mmap(off_t offset) {
    std::lock_guard lock(mu);
    const std::size_t i = static_cast<std::size_t>(offset) / page_len();
    if (i >= bufs.size()) return fail(EINVAL), MAP_FAILED;
    ++mapped;
    return bufs[i].data();
  }
  bool munmap(void* addr) {
    std::lock_guard lock(mu);
    for (auto& b : bufs) {
      if (b.data() == addr) {
        --mapped;
        return true;
      }
    }
    return false;
  }
};

FakeDriver* g_fake = nullptr;

bool is_fake(int fd) {
  static const dev_t zero = [] {
    struct stat st {};
    ::stat(kDevice, &st);
    return st.st_rdev;
  }();
  struct stat st {};
  return g_fake != nullptr && fd >= 0 && ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
         st.st_rdev == zero;
}

}  // namespace
}  // namespace edgevla::nodes

// The interposers.
extern "C" int ioctl(int fd, unsigned long request, ...) noexcept {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (edgevla::nodes::is_fake(fd)) return edgevla::nodes::g_fake->ioctl(request, arg);
  static const auto real =
      reinterpret_cast<int (*)(int, unsigned long, ...)>(::dlsym(RTLD_NEXT, "ioctl"));
  return real(fd, request, arg);
}

extern "C" void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) noexcept {
  if (edgevla::nodes::is_fake(fd)) return edgevla::nodes::g_fake->mmap(offset);
  static const auto real =
      reinterpret_cast<void* (*)(void*, size_t, int, int, int, off_t)>(::dlsym(RTLD_NEXT, "mmap"));
  return real(addr, len, prot, flags, fd, offset);
}

extern "C" int munmap(void* addr, size_t len) noexcept {
  if (edgevla::nodes::g_fake != nullptr && edgevla::nodes::g_fake->munmap(addr)) return 0;
  static const auto real = reinterpret_cast<int (*)(void*, size_t)>(::dlsym(RTLD_NEXT, "munmap"));
  return real(addr, len);
}

namespace edgevla::nodes {
namespace {

class CameraV4l2Fake : public ::testing::Test {
 protected:
  void SetUp() override { g_fake = &fake; }
  void TearDown() override { g_fake = nullptr; }
  FakeDriver fake;
};

// A YUYV frame of one gray level (U = V = 128), rows padded like the driver says.
Bytes yuyv_gray(int y_level, int pad) {
  Bytes f(static_cast<std::size_t>(kWidth * 2 + pad) * kHeight, 0xee);
  for (int y = 0; y < kHeight; ++y) {
    std::uint8_t* p = &f[static_cast<std::size_t>(y) * (kWidth * 2 + pad)];
    for (int x = 0; x < kWidth; ++x) {
      p[2 * x] = static_cast<std::uint8_t>(y_level);
      p[2 * x + 1] = 128;
    }
  }
  return f;
}
int gray_rgb(int y_level) {
  return std::clamp(static_cast<int>(std::lround(1.164 * (y_level - 16))), 0, 255);
}

void expect_gray(const msgs::Image& m, int level) {
  ASSERT_EQ(m.pixels().shape(), (Shape{kHeight, kWidth, 3}));
  const std::uint8_t* p = m.pixels().data<std::uint8_t>();
  int worst = 0;
  for (std::int64_t i = 0; i < m.pixels().numel(); ++i)
    worst = std::max(worst, std::abs(p[i] - gray_rgb(level)));
  EXPECT_LE(worst, 1) << "gray level " << level;
}

TEST_F(CameraV4l2Fake, YuyvFramesArriveWithDriverStampsAndStreamingStopsOnDeactivate) {
  Camera cam({{"source", "v4l2"},
              {"device", kDevice},
              {"pixel_format", "yuyv"},
              {"camera", "base_0_rgb"}});
  ASSERT_OK(cam.activate());
  EXPECT_TRUE(fake.streaming);
  EXPECT_EQ(fake.mapped, 4);
  for (int k = 0; k < 3; ++k) {
    const std::int64_t before = wall_now_ns();
    ASSERT_EQ(fake.deliver(yuyv_gray(40 + 60 * k, fake.pad), /*age_ns=*/30'000'000), 1);
    const std::int64_t after = wall_now_ns();
    auto got = cam.frames(1);
    ASSERT_EQ(got.size(), 1u) << "frame " << k;
    expect_gray(got[0], 40 + 60 * k);
    EXPECT_EQ(got[0].camera(), "base_0_rgb");
    EXPECT_EQ(got[0].encoding(), "rgb8");
    EXPECT_EQ(frame_of(got[0]), k);
    EXPECT_EQ(buffer_kind_name(got[0].pixels().buffer()->kind()), "shm");
    // The driver stamped the frame 30 ms before it was delivered: the header says so.
    EXPECT_GE(got[0].header().source_stamp_ns, before - 30'000'000 - 5'000'000);
    EXPECT_LE(got[0].header().source_stamp_ns, after - 30'000'000 + 5'000'000);
  }
  EXPECT_TRUE(
      testing::eventually([&] { return fake.queued_count() == 4; }));  // every buffer requeued
  ASSERT_OK(cam.host->deactivate_all());
  EXPECT_FALSE(fake.streaming);
  EXPECT_EQ(fake.stream_offs, 1);
  EXPECT_EQ(fake.mapped, 0);
  EXPECT_TRUE(fake.bufs.empty());  // REQBUFS 0 gave them back
  EXPECT_EQ(cam.host->bad_inputs("cam"), 0u);
}

TEST_F(CameraV4l2Fake, MjpegFramesDecode) {
  Camera cam({{"source", "v4l2"}, {"device", kDevice}, {"pixel_format", "mjpeg"}});
  ASSERT_OK(cam.activate());
  const Bytes rgb = picture(kWidth, kHeight, 1);
  ASSERT_EQ(fake.deliver(encode_jpeg(kWidth, kHeight, 3, rgb)), 1);
  auto got = cam.frames(1);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].pixels().shape(), (Shape{kHeight, kWidth, 3}));
  const Diff d = diff(got[0].pixels().data<std::uint8_t>(), rgb);
  EXPECT_LE(d.max_abs, 16);
  EXPECT_LE(d.mean_abs, 3.0);
}

TEST_F(CameraV4l2Fake, TheNewestReadyFrameIsPublishedAndOlderOnesRequeued) {
  Camera cam({{"source", "v4l2"}, {"device", kDevice}, {"pixel_format", "yuyv"}});
  ASSERT_OK(cam.activate());
  ASSERT_EQ(
      fake.deliver({yuyv_gray(50, fake.pad), yuyv_gray(100, fake.pad), yuyv_gray(150, fake.pad)}),
      3);
  auto got = cam.frames(1);
  ASSERT_EQ(got.size(), 1u);
  expect_gray(got[0], 150);
  EXPECT_TRUE(testing::eventually([&] { return fake.queued_count() == 4; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(cam.frames(0).empty());  // the two older frames were not published late
}

TEST_F(CameraV4l2Fake, CorruptAndUndecodableFramesAreSkippedAndCounted) {
  Camera cam({{"source", "v4l2"}, {"device", kDevice}, {"pixel_format", "mjpeg"}});
  ASSERT_OK(cam.activate());
  const Bytes good = encode_jpeg(kWidth, kHeight, 3, picture(kWidth, kHeight, 0));
  ASSERT_EQ(fake.deliver(good, 0, /*error=*/true), 1);  // the driver flags it
  ASSERT_TRUE(testing::eventually([&] { return cam.host->bad_inputs("cam") == 1; }));
  ASSERT_EQ(fake.deliver(Bytes{1, 2, 3, 4}), 1);  // not a JPEG
  ASSERT_TRUE(testing::eventually([&] { return cam.host->bad_inputs("cam") == 2; }));
  const Bytes other_size = encode_jpeg(32, 24, 3, picture(32, 24, 0));
  ASSERT_EQ(fake.deliver(other_size), 1);
  ASSERT_TRUE(testing::eventually([&] { return cam.host->bad_inputs("cam") == 3; }));
  EXPECT_TRUE(cam.frames(0).empty());
  ASSERT_EQ(fake.deliver(good), 1);
  auto got = cam.frames(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(frame_of(got[0]), 0);  // the counter counts published frames
  EXPECT_TRUE(testing::eventually([&] { return fake.queued_count() == 4; }));
}

TEST_F(CameraV4l2Fake, ASilentCameraIsReportedOncePerSecondAndTheNodeCarriesOn) {
  Camera cam({{"source", "v4l2"}, {"device", kDevice}, {"pixel_format", "yuyv"}});
  ASSERT_OK(cam.activate());
  ASSERT_EQ(fake.deliver(yuyv_gray(80, fake.pad)), 1);
  ASSERT_EQ(cam.frames(1).size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::uint64_t reports = cam.host->bad_inputs("cam");
  EXPECT_GE(reports, 1u);  // 2 expected (at 1 s and 2 s); generous for a loaded machine
  EXPECT_LE(reports, 3u);
  ASSERT_EQ(fake.deliver(yuyv_gray(90, fake.pad)), 1);  // it comes back
  auto got = cam.frames(1);
  ASSERT_EQ(got.size(), 1u);
  expect_gray(got[0], 90);
}

TEST_F(CameraV4l2Fake, AnUnpluggedCameraIsReportedAndDeactivationIsClean) {
  Camera cam({{"source", "v4l2"}, {"device", kDevice}, {"pixel_format", "yuyv"}});
  ASSERT_OK(cam.activate());
  {
    std::lock_guard lock(fake.mu);
    fake.dqbuf_errno = ENODEV;
  }
  ASSERT_TRUE(testing::eventually([&] { return cam.host->bad_inputs("cam") >= 1; },
                                  std::chrono::seconds(5)));
  ASSERT_OK(cam.host->deactivate_all());
  EXPECT_FALSE(fake.streaming);
  EXPECT_EQ(fake.mapped, 0);
}

TEST_F(CameraV4l2Fake, AStampOnAnotherClockIsReplacedByTheCaptureTime) {
  fake.monotonic_stamps = false;
  Camera cam({{"source", "v4l2"}, {"device", kDevice}, {"pixel_format", "yuyv"}});
  ASSERT_OK(cam.activate());
  const std::int64_t before = wall_now_ns();
  ASSERT_EQ(fake.deliver(yuyv_gray(80, fake.pad), /*age_ns=*/500'000'000), 1);
  auto got = cam.frames(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_GE(got[0].header().source_stamp_ns, before);
  EXPECT_LE(got[0].header().source_stamp_ns, wall_now_ns());
}

struct OpenCase {
  const char* what;
  std::function<void(FakeDriver&)> setup;
  StatusCode code;
  std::vector<std::string> mentions;  // in the error message, besides the device
  std::string pixel_format = "yuyv";
  std::string width = "0";
  std::string height = "0";
};

TEST_F(CameraV4l2Fake, OpenErrorsNameTheDeviceTheProblemAndTheFix) {
  const std::vector<OpenCase> cases = {
      {"format not offered",
       [](FakeDriver& f) { f.formats = {V4L2_PIX_FMT_YUYV}; },
       StatusCode::kInvalidArgument,
       {"Fake Camera", "'mjpeg'", "offers: YUYV", "pixel_format"},
       "mjpeg"},
      {"size not offered",
       [](FakeDriver&) {},
       StatusCode::kInvalidArgument,
       {"64x48", "1280x720", "--list-formats-ext"},
       "yuyv",
       "1280",
       "720"},
      {"busy",
       [](FakeDriver& f) { f.s_fmt_errno = EBUSY; },
       StatusCode::kUnavailable,
       {"busy", "fuser"}},
      {"usb bandwidth",
       [](FakeDriver& f) { f.streamon_errno = ENOSPC; },
       StatusCode::kResourceExhausted,
       {"VIDIOC_STREAMON", "bandwidth"}},
      {"metadata node",
       [](FakeDriver& f) { f.caps = V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING; },
       StatusCode::kInvalidArgument,
       {"not a single-plane video capture device"}},
      {"no streaming",
       [](FakeDriver& f) { f.caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_READWRITE; },
       StatusCode::kInvalidArgument,
       {"streaming"}},
  };
  for (const OpenCase& c : cases) {
    {
      std::lock_guard lock(fake.mu);
      fake.formats = {V4L2_PIX_FMT_MJPEG, V4L2_PIX_FMT_YUYV};
      fake.caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
      fake.s_fmt_errno = fake.streamon_errno = 0;
      c.setup(fake);
    }
    Camera cam({{"source", "v4l2"},
                {"device", kDevice},
                {"pixel_format", c.pixel_format},
                {"width", c.width},
                {"height", c.height}});
    const Status s = cam.activate();
    EXPECT_EQ(s.code(), c.code) << c.what << ": " << s.to_string();
    EXPECT_NE(s.message().find(kDevice), std::string::npos) << c.what << ": " << s.message();
    for (const std::string& m : c.mentions) {
      EXPECT_NE(s.message().find(m), std::string::npos) << c.what << ": " << s.message();
    }
    EXPECT_EQ(fake.mapped, 0) << c.what << ": buffers left mapped after a failed activate";
    EXPECT_FALSE(fake.streaming) << c.what;
  }
}

}  // namespace
}  // namespace edgevla::nodes
