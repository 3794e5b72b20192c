// Where a stretch of device work leaves the GPU idle: the union of its kernels', copies' and
// memsets' intervals (from any stream) inside a host-marked window, the idle gaps between them,
// the lead before the first record and the tail after the last, and each stream's share. The
// records come from bench/cuda_timeline.cpp (CUPTI's activity records, when the benches are
// built with CUPTI); this part needs no GPU, so tests/bench/timeline_test.cpp checks it on
// hand-made records.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace edgevla::bench {

struct TimelineRecord {
  enum class Kind { kKernel, kCopy, kSet };
  Kind kind = Kind::kKernel;
  std::string name;  // a kernel's demangled name; "copy HtoD 1024 B", "memset 16 B"
  std::uint32_t stream = 0;
  std::uint64_t start = 0, end = 0;  // ns, CUPTI's clock (cuptiGetTimestamp's)
};

struct TimelineGap {
  std::uint64_t start = 0, end = 0;  // ns, on the records' clock
  std::string before, after;         // the record whose end opened the gap, the one that closed it
  std::uint64_t ns() const { return end - start; }
};

struct TimelineStream {
  std::uint32_t id = 0;
  std::size_t records = 0;
  std::uint64_t first_start = 0, last_end = 0, busy_ns = 0;  // busy: its own records' union
};

struct TimelineSummary {
  std::uint64_t from = 0, to = 0;  // the window
  std::size_t records = 0;         // records overlapping the window
  std::uint64_t busy_ns = 0;       // the union of their intervals, clipped to the window
  std::uint64_t lead_ns = 0;       // window start -> first record (host work, launch)
  std::uint64_t tail_ns = 0;       // last record's end -> window end (copy-out, host wake-up)
  std::uint64_t gaps_ns = 0;       // idle between the first record and the last
  std::size_t gap_count = 0;       // gaps of at least min_gap_ns
  std::vector<TimelineGap> largest;  // the largest gaps (at least min_gap_ns), largest first
  std::vector<TimelineStream> streams;
};

namespace timeline_detail {

// The union length of [start, end) intervals sorted by start.
inline std::uint64_t union_ns(const std::vector<const TimelineRecord*>& sorted, std::uint64_t from,
                              std::uint64_t to) {
  std::uint64_t total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (const TimelineRecord* r : sorted) {
    const std::uint64_t s = std::max(r->start, from), e = std::min(r->end, to);
    if (e <= s) continue;
    if (!open || s > cur_e) {
      if (open) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}

}  // namespace timeline_detail

// Summarises the records that overlap [from, to) (ns). Gaps shorter than min_gap_ns still count in
// gaps_ns but are not listed; at most `top` gaps are listed.
inline TimelineSummary summarize_timeline(const std::vector<TimelineRecord>& records, std::uint64_t from,
                                          std::uint64_t to, std::uint64_t min_gap_ns = 1000,
                                          std::size_t top = 12) {
  TimelineSummary out;
  out.from = from;
  out.to = to;
  std::vector<const TimelineRecord*> in;
  for (const TimelineRecord& r : records) {
    if (r.end > from && r.start < to && r.end > r.start) in.push_back(&r);
  }
  std::sort(in.begin(), in.end(), [](const TimelineRecord* a, const TimelineRecord* b) {
    return a->start != b->start ? a->start < b->start : a->end < b->end;
  });
  out.records = in.size();
  if (in.empty()) {
    out.lead_ns = to > from ? to - from : 0;
    return out;
  }
  out.busy_ns = timeline_detail::union_ns(in, from, to);
  // One sweep: the frontier is the latest end so far and the record that set it.
  const TimelineRecord* frontier = in.front();
  std::uint64_t frontier_end = std::min(in.front()->end, to);
  const std::uint64_t first = std::max(in.front()->start, from);
  out.lead_ns = first - from;
  std::vector<TimelineGap> gaps;
  for (std::size_t i = 1; i < in.size(); ++i) {
    const TimelineRecord* r = in[i];
    const std::uint64_t s = std::max(r->start, from);
    if (s > frontier_end) {
      const std::uint64_t g = s - frontier_end;
      out.gaps_ns += g;
      if (g >= min_gap_ns) gaps.push_back({frontier_end, s, frontier->name, r->name});
    }
    const std::uint64_t e = std::min(r->end, to);
    if (e > frontier_end) {
      frontier_end = e;
      frontier = r;
    }
  }
  out.tail_ns = to > frontier_end ? to - frontier_end : 0;
  out.gap_count = gaps.size();
  std::stable_sort(gaps.begin(), gaps.end(), [](const TimelineGap& a, const TimelineGap& b) { return a.ns() > b.ns(); });
  if (gaps.size() > top) gaps.resize(top);
  out.largest = std::move(gaps);
  std::map<std::uint32_t, std::vector<const TimelineRecord*>> by_stream;
  for (const TimelineRecord* r : in) by_stream[r->stream].push_back(r);
  for (const auto& [id, rs] : by_stream) {
    TimelineStream st;
    st.id = id;
    st.records = rs.size();
    st.first_start = std::max(rs.front()->start, from);
    for (const TimelineRecord* r : rs) st.last_end = std::max(st.last_end, std::min(r->end, to));
    st.busy_ns = timeline_detail::union_ns(rs, from, to);
    out.streams.push_back(st);
  }
  return out;
}

// One JSON object (no newline): the window, busy, lead, gaps and tail in µs, the listed gaps with
// their offsets from the window's start, and each stream's span and busy time.
inline std::string timeline_json(const TimelineSummary& s) {
  const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  const auto esc = [](const std::string& n) {
    std::string o;
    for (const char c : n.substr(0, 100)) {
      if (c == '"' || c == '\\') o += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) o += c;
    }
    return o;
  };
  std::string j;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"window_us\": %.1f, \"records\": %zu, \"busy_us\": %.1f, \"lead_us\": %.1f, \"gaps_us\": %.1f, "
                "\"gap_count\": %zu, \"tail_us\": %.1f, \"largest_gaps\": [",
                us(s.to - s.from), s.records, us(s.busy_ns), us(s.lead_ns), us(s.gaps_ns), s.gap_count, us(s.tail_ns));
  j += buf;
  for (std::size_t i = 0; i < s.largest.size(); ++i) {
    const TimelineGap& g = s.largest[i];
    std::snprintf(buf, sizeof buf, "%s{\"at_us\": %.1f, \"us\": %.1f, \"opened_by\": \"", i ? ", " : "",
                  us(g.start - s.from), us(g.ns()));
    j += buf;
    j += esc(g.before) + "\", \"closed_by\": \"" + esc(g.after) + "\"}";
  }
  j += "], \"streams\": [";
  for (std::size_t i = 0; i < s.streams.size(); ++i) {
    const TimelineStream& st = s.streams[i];
    std::snprintf(buf, sizeof buf, "%s{\"id\": %u, \"records\": %zu, \"from_us\": %.1f, \"to_us\": %.1f, \"busy_us\": %.1f}",
                  i ? ", " : "", st.id, st.records, us(st.first_start - s.from), us(st.last_end - s.from), us(st.busy_ns));
    j += buf;
  }
  j += "]}";
  return j;
}

}  // namespace edgevla::bench
