// GR00T N1.6's camera-frame pipeline, to the rounding of the libraries the published model was
// trained with (../shared/notes/groot-n16.md §2, §8; the NumPy reference is
// tests/reference/groot/image_ref.py):
//   optional letterbox (black bars to a square, top/left get floor(pad / 2)),
//   SmallestMaxSize(256) with OpenCV's INTER_AREA, centre crop to int(0.95 H) × int(0.95 W),
//   SmallestMaxSize(256) again, then the Eagle processor's smart_resize to multiples of 28 and
//   Pillow's bicubic resize; pixels (x − 127.5) / 127.5 as f32 [3, H, W].
// OpenCV's INTER_AREA (its fast integer-factor path, the float area path and the fixed-point
// path it takes when enlarging) and Pillow's 8-bit bicubic resampler are written out from their
// algorithms; neither library is linked. Their passes along rows are runtime/model/row_pass.hpp's. Frames are uint8 RGB [H, W, 3].
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "runtime/core/status.hpp"

namespace edgevla {
class ThreadPool;
}

namespace edgevla::model::groot {

// Storage whose new elements are left uninitialised (resize(n), vector(n)): every pass writes each
// byte of the frame it makes, so zeroing first only costs a write over the whole frame.
template <class T>
struct UninitAllocator {
  using value_type = T;
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return std::allocator<T>{}.allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const UninitAllocator&, const UninitAllocator&) { return true; }
};
using Pixels = std::vector<std::uint8_t, UninitAllocator<std::uint8_t>>;

// An 8-bit RGB frame's bytes held elsewhere (a camera's buffer), row-major [height][width][3].
struct FrameView {
  int height = 0, width = 0;
  std::span<const std::uint8_t> rgb;
};

// An 8-bit RGB frame, row-major [height][width][3].
struct Frame {
  int height = 0, width = 0;
  Pixels rgb;
  operator FrameView() const { return {height, width, {rgb.data(), rgb.size()}}; }  // NOLINT: a view of it
};
// A frame holding a copy of `view`'s bytes.
inline Frame to_frame(FrameView view) { return {view.height, view.width, Pixels(view.rgb.begin(), view.rgb.end())}; }

// Every pass below may run in slices of rows over a thread pool (runtime/util/thread_pool.hpp;
// nullptr: the calling thread alone); the bytes are the same either way.
// A pool for the passes spins this long after each, so that the serial steps between two passes
// (a crop, a new frame's allocation) do not send its workers to sleep, and is parked once the
// frames are done.
inline constexpr std::chrono::microseconds kFramePoolSpin{500};
struct FrameOptions {
  int shortest_edge = 256;
  double crop_fraction = 0.95;
  bool letterbox = false;
  ThreadPool* pool = nullptr;
};

// cv2.resize(frame, (w, h), interpolation=INTER_AREA).
Frame resize_area(FrameView in, int height, int width, ThreadPool* pool = nullptr);
// PIL Image.resize((w, h)) with BICUBIC: horizontal pass, then vertical, each rounded to uint8.
Frame resize_bicubic(FrameView in, int height, int width, ThreadPool* pool = nullptr);
// Eagle's smart_resize of a height × width image: {height, width} multiples of 28; an aspect
// ratio above 200 is an error.
Expected<std::pair<int, int>> smart_resize(int height, int width);

// The whole pipeline for one frame: the uint8 frame the vision tower sees.
Expected<Frame> preprocess_frame(FrameView in, const FrameOptions& options = {});
// (x − 127.5) / 127.5 in f32, channels first: out[c · H · W + y · W + x].
void normalize_pixels(FrameView frame, float* out, ThreadPool* pool = nullptr);
// Vision tokens of a preprocessed frame after the 2 × 2 pixel-unshuffle: (H / 28) · (W / 28).
inline int vision_tokens(FrameView frame) { return (frame.height / 28) * (frame.width / 28); }

}  // namespace edgevla::model::groot
