// bench/cuda_timeline.hpp: CUPTI's activity API, buffers handed to CUPTI and read back when it
// completes them (at the latest at cuptiActivityFlushAll in stop()).
#include "bench/cuda_timeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#ifdef EDGEVLA_BENCH_CUPTI
#include <cupti.h>
#include <cxxabi.h>
#endif

namespace edgevla::bench {

#ifdef EDGEVLA_BENCH_CUPTI
namespace {

std::mutex g_mu;
std::vector<TimelineRecord>* g_sink = nullptr;  // the timeline between start() and stop()
constexpr std::size_t kBufferBytes = 8u << 20;

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return name;
  std::string out(d);
  std::free(d);
  return out;
}

const char* copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    default: return "other";
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* a = nullptr;
  while (g_sink != nullptr && cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
    TimelineRecord r;
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      r = {TimelineRecord::Kind::kKernel, demangle(k->name), k->streamId, k->start, k->end};
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      r = {TimelineRecord::Kind::kCopy,
           std::string("copy ") + copy_kind(m->copyKind) + " " + std::to_string(m->bytes) + " B", m->streamId,
           m->start, m->end};
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      r = {TimelineRecord::Kind::kSet, "memset " + std::to_string(m->bytes) + " B", m->streamId, m->start, m->end};
    } else {
      continue;
    }
    g_sink->push_back(std::move(r));
  }
  std::free(buffer);
}

std::string cupti_error(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return std::string("timeline: ") + what + " failed: " + (text ? text : "unknown CUPTI error");
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

bool DeviceTimeline::available() { return true; }

std::string DeviceTimeline::start() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_sink != nullptr) return "timeline: another timeline is recording";
    records_.clear();
    g_sink = &records_;
  }
  started_ = true;
  static const CUptiResult registered = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (registered != CUPTI_SUCCESS) return cupti_error("cuptiActivityRegisterCallbacks", registered);
  for (CUpti_ActivityKind k : kKinds) {
    if (CUptiResult r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) return cupti_error("cuptiActivityEnable", r);
  }
  return "";
}

std::string DeviceTimeline::flush() {
  const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return r == CUPTI_SUCCESS ? "" : cupti_error("cuptiActivityFlushAll", r);
}

void DeviceTimeline::clear() {
  std::lock_guard<std::mutex> lock(g_mu);
  records_.clear();
}

DeviceTimeline::~DeviceTimeline() {
  if (!started_) return;
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink == &records_) g_sink = nullptr;
}

std::uint64_t DeviceTimeline::now() {
  std::uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

#else

bool DeviceTimeline::available() { return false; }
std::string DeviceTimeline::start() {
  return "timeline: this build has no CUPTI (CMake found no CUDA::cupti); rebuild where the CUDA toolkit's "
         "CUPTI is installed, or give CUDA_cupti_LIBRARY and CUDAToolkit_CUPTI_INCLUDE_DIR";
}
std::string DeviceTimeline::flush() { return ""; }
void DeviceTimeline::clear() { records_.clear(); }
DeviceTimeline::~DeviceTimeline() = default;
std::uint64_t DeviceTimeline::now() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

#endif

std::string record_chunks(DeviceTimeline& tl, const std::string& bench, int views, int warmup, int runs,
                          const std::function<std::string()>& chunk, const std::string& csv_prefix) {
  for (int r = 0; r < std::max(warmup, 2); ++r) {
    if (std::string e = chunk(); !e.empty()) return e;
  }
  if (std::string e = tl.flush(); !e.empty()) return e;
  tl.clear();
  std::vector<std::uint64_t> from(static_cast<std::size_t>(std::max(runs, 0))), to(from.size());
  std::vector<double> e2e(from.size());
  for (std::size_t r = 0; r < from.size(); ++r) {
    from[r] = DeviceTimeline::now();
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string e = chunk(); !e.empty()) return e;
    e2e[r] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    to[r] = DeviceTimeline::now();
  }
  if (std::string e = tl.flush(); !e.empty()) return e;
  for (std::size_t r = 0; r < from.size(); ++r) {
    std::printf("{\"bench\": \"%s_timeline\", \"views\": %d, \"run\": %zu, \"e2e_ms\": %.3f, \"timeline\": %s}\n",
                bench.c_str(), views, r, e2e[r], timeline_json(summarize_timeline(tl.records(), from[r], to[r])).c_str());
  }
  std::fflush(stdout);
  std::string e;
  if (!csv_prefix.empty() && !from.empty()) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> windows;
    for (std::size_t r = 0; r < from.size(); ++r) windows.emplace_back(from[r], to[r]);
    e = tl.write_csv(csv_prefix + "_" + std::to_string(views) + "v.csv", windows);
  }
  tl.clear();
  return e;
}

std::string DeviceTimeline::write_csv(const std::string& path,
                                      const std::vector<std::pair<std::uint64_t, std::uint64_t>>& windows) const {
  if (windows.empty()) return "timeline: no chunk to write to " + path;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return "timeline: cannot write " + path;
  std::fprintf(f, "kind,stream,start_ns,end_ns,name\n");
  std::uint64_t from = windows.front().first, to = windows.front().second;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    from = std::min(from, windows[i].first);
    to = std::max(to, windows[i].second);
    std::fprintf(f, "chunk,0,%llu,%llu,\"chunk %zu\"\n", static_cast<unsigned long long>(windows[i].first),
                 static_cast<unsigned long long>(windows[i].second), i);
  }
  for (const TimelineRecord& r : records_) {
    if (r.end <= from || r.start >= to) continue;
    const char* kind = r.kind == TimelineRecord::Kind::kKernel ? "kernel" : r.kind == TimelineRecord::Kind::kCopy ? "copy" : "memset";
    std::string name;
    for (const char c : r.name) name += c == '"' ? '\'' : c;
    std::fprintf(f, "%s,%u,%llu,%llu,\"%s\"\n", kind, r.stream, static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), name.c_str());
  }
  return std::fclose(f) == 0 ? "" : "timeline: writing " + path + " failed";
}

}  // namespace edgevla::bench
