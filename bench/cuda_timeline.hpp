// A device timeline of the benches' runs from CUPTI's activity records (kernels, graph nodes
// included, copies and memsets, each with its stream and device start/end), for
// bench/timeline.hpp's summary: where an end-to-end chunk leaves the GPU idle. Built with CUPTI
// where CMake finds it (CUDA::cupti); without it start() refuses by name. The GPU machine has no
// Nsight Systems; this is the timeline the benches take instead. Recording slows the work it
// records a little: a bench in timeline mode times nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/timeline.hpp"

namespace edgevla::bench {

class DeviceTimeline final {
 public:
  DeviceTimeline() = default;
  DeviceTimeline(const DeviceTimeline&) = delete;
  DeviceTimeline& operator=(const DeviceTimeline&) = delete;
  ~DeviceTimeline();
  // Whether this build has CUPTI.
  static bool available();
  // Starts collecting (kernels, copies, memsets of every stream): "" or an error naming the cause.
  // Start before the engines activate: graphs instantiated before it may go unrecorded.
  std::string start();
  // Hands every completed record to records() (CUPTI's buffers flushed): "" or an error.
  std::string flush();
  // Forgets the records so far (collection goes on).
  void clear();
  // The host's time on the records' clock (ns).
  static std::uint64_t now();
  const std::vector<TimelineRecord>& records() const { return records_; }
  // The records overlapping the windows' span as CSV (kind, stream, start_ns, end_ns, name),
  // each window [from, to) first as a row of kind "chunk" (stream 0, name "chunk <i>"), so that a
  // reader (bench/timeline_csv.py) can split the records by chunk.
  std::string write_csv(const std::string& path,
                        const std::vector<std::pair<std::uint64_t, std::uint64_t>>& windows) const;

 private:
  bool started_ = false;
  std::vector<TimelineRecord> records_;
};

// Runs `chunk` `warmup` times (at least twice: the first run of a shape captures its graphs), then
// `runs` times under tl's recording, and prints a JSON line for each recorded run
// ({"bench": "<bench>_timeline", "views", "run", "e2e_ms", "timeline": bench/timeline.hpp's
// summary of the host-marked window from the call to its return}); with csv_prefix, writes the
// runs' records to <csv_prefix>_<views>v.csv. Clears tl's records first and after. `chunk`
// returns "" or an error, which ends the runs. "" or the first error.
std::string record_chunks(DeviceTimeline& tl, const std::string& bench, int views, int warmup, int runs,
                          const std::function<std::string()>& chunk, const std::string& csv_prefix);

}  // namespace edgevla::bench
