// Helpers shared by the camera node's tests: test pictures, JPEG encoding, a scratch folder and
// a camera node running in a NodeHost with its frames collected.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "msgs/types.hpp"
#include "runtime/bus/bus.hpp"
#include "runtime/bus/subscription_queue.hpp"
#include "runtime/node/host.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla::nodes::camera_test {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// An 8-bit JPEG (components 3: RGB, 1: grayscale) at quality 95, in memory.
inline Bytes encode_jpeg(int w, int h, int components, const Bytes& pixels) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = components;
  c.in_color_space = components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data() +
                                        static_cast<std::size_t>(c.next_scanline) * w * components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  Bytes bytes(out, out + size);
  std::free(out);
  return bytes;
}

inline void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A distinct rgb8 test picture per `k` (0..2); smooth (no wrap-around up to 64x48), so JPEG
// keeps it close.
inline Bytes picture(int w, int h, int k) {
  Bytes p(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::uint8_t* q = &p[(static_cast<std::size_t>(y) * w + x) * 3];
      q[0] = static_cast<std::uint8_t>(x * 2 + k * 40);
      q[1] = static_cast<std::uint8_t>(y * 3 + k * 20);
      q[2] = static_cast<std::uint8_t>(220 - (x + y) - k * 20);
    }
  }
  return p;
}

struct Diff {
  int max_abs = 0;
  double mean_abs = 0;
};
inline Diff diff(const std::uint8_t* a, const Bytes& b) {
  Diff d;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int e = std::abs(int(a[i]) - int(b[i]));
    d.max_abs = std::max(d.max_abs, e);
    d.mean_abs += e;
  }
  d.mean_abs /= static_cast<double>(b.size());
  return d;
}

// A folder removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("edgevla-camera-" + std::to_string(::getpid()) + "-" + std::to_string(++count_));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  static inline int count_ = 0;
  fs::path path_;
};

// A camera node named "cam" in its own bus and host, its Images collected from /cam/image.
struct Camera {
  std::unique_ptr<Bus> bus;
  std::unique_ptr<NodeHost> host;
  std::shared_ptr<SubscriptionQueue> queue;
  Status added;  // configure's result

  explicit Camera(std::initializer_list<std::pair<std::string, std::string>> params,
                  const std::string& tag = "cam") {
    BusOptions o;
    o.domain = testing::unique_domain(tag);
    bus = std::move(*Bus::create(o));
    host = std::make_unique<NodeHost>(*bus);
    queue = std::make_shared<SubscriptionQueue>("/cam/image", "Image", QoS::keep_last(100000),
                                                "test", std::make_shared<Waker>());
    EXPECT_OK(bus->attach(queue));
    NodeOptions n;
    n.name = "cam";
    n.type = "camera";
    n.remaps["image"] = "/cam/image";
    for (const auto& [k, v] : params) n.params[k] = {YAML::Load(v), "test"};
    added = host->add(n).status();
  }
  ~Camera() {
    host->shutdown();
    bus->detach(queue);
  }
  Status activate() { return added.is_ok() ? host->activate_all() : added; }
  // Waits until `n` frames arrived (or 10 s passed) and returns all that did.
  std::vector<msgs::Image> frames(std::size_t n) {
    std::vector<msgs::Image> got;
    testing::eventually([&] {
      while (MessagePtr m = queue->pop()) got.emplace_back(m);
      return got.size() >= n;
    });
    return got;
  }
};

inline std::int64_t frame_of(const msgs::Image& m) { return *m.message().int_field("frame"); }

}  // namespace edgevla::nodes::camera_test
