// bench/timeline.hpp on hand-made records: busy time as the union over streams, the gaps, lead
// and tail inside a window, records clipped to it, and the JSON the benches print.
#include "bench/timeline.hpp"

#include <gtest/gtest.h>

namespace edgevla::bench {
namespace {

TimelineRecord k(const char* name, std::uint32_t stream, std::uint64_t start, std::uint64_t end) {
  return {TimelineRecord::Kind::kKernel, name, stream, start, end};
}

TEST(Timeline, BusyIsTheUnionOverStreamsAndGapsAreWhereNothingRuns) {
  // Window 0-100 µs. Stream 7: a 10-30, b 35-50; stream 9: c 20-40 (overlaps a and b), d 60-70;
  // stream 7 again: e 90-95. Busy 10-50, 60-70, 90-95 = 55 µs; lead 10, gaps 10 (50-60) + 20
  // (70-90), tail 5.
  const std::vector<TimelineRecord> r = {k("e", 7, 90000, 95000), k("a", 7, 10000, 30000), k("c", 9, 20000, 40000),
                                         k("b", 7, 35000, 50000), k("d", 9, 60000, 70000)};
  const TimelineSummary s = summarize_timeline(r, 0, 100000, 1000, 12);
  EXPECT_EQ(s.records, 5u);
  EXPECT_EQ(s.busy_ns, 55000u);
  EXPECT_EQ(s.lead_ns, 10000u);
  EXPECT_EQ(s.gaps_ns, 30000u);
  EXPECT_EQ(s.tail_ns, 5000u);
  EXPECT_EQ(s.lead_ns + s.busy_ns + s.gaps_ns + s.tail_ns, 100000u);
  ASSERT_EQ(s.largest.size(), 2u);
  // Largest first; each gap names the record whose end opened it and the one that closed it.
  EXPECT_EQ(s.largest[0].ns(), 20000u);
  EXPECT_EQ(s.largest[0].before, "d");
  EXPECT_EQ(s.largest[0].after, "e");
  EXPECT_EQ(s.largest[1].ns(), 10000u);
  EXPECT_EQ(s.largest[1].before, "b");  // b ends at 50, after c (40): the frontier is b's
  EXPECT_EQ(s.largest[1].after, "d");
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].id, 7u);
  EXPECT_EQ(s.streams[0].records, 3u);
  EXPECT_EQ(s.streams[0].busy_ns, 40000u);  // 20 + 15 + 5
  EXPECT_EQ(s.streams[0].first_start, 10000u);
  EXPECT_EQ(s.streams[0].last_end, 95000u);
  EXPECT_EQ(s.streams[1].busy_ns, 30000u);
}

TEST(Timeline, RecordsAreClippedToTheWindowAndShortGapsOnlyCount) {
  // A record straddling each edge; a 0.5 µs gap under the 1 µs listing threshold.
  const std::vector<TimelineRecord> r = {k("x", 1, 500, 2000), k("y", 1, 2500, 4000), k("z", 2, 3900, 9000),
                                         k("outside", 1, 20000, 30000)};
  const TimelineSummary s = summarize_timeline(r, 1000, 5000, 1000, 12);
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.lead_ns, 0u);
  EXPECT_EQ(s.busy_ns, 3500u);  // 1000-2000, 2500-5000
  EXPECT_EQ(s.gaps_ns, 500u);
  EXPECT_EQ(s.gap_count, 0u);
  EXPECT_TRUE(s.largest.empty());
  EXPECT_EQ(s.tail_ns, 0u);
}

TEST(Timeline, AnEmptyWindowIsAllLead) {
  const TimelineSummary s = summarize_timeline({k("late", 1, 9000, 9500)}, 0, 8000);
  EXPECT_EQ(s.records, 0u);
  EXPECT_EQ(s.lead_ns, 8000u);
  EXPECT_EQ(s.busy_ns, 0u);
}

TEST(Timeline, TheListIsCutAtTop) {
  std::vector<TimelineRecord> r;
  for (int i = 0; i < 10; ++i) r.push_back(k("n", 1, static_cast<std::uint64_t>(i) * 10000, static_cast<std::uint64_t>(i) * 10000 + 1000 + i * 100));
  const TimelineSummary s = summarize_timeline(r, 0, 100000, 1000, 3);
  EXPECT_EQ(s.gap_count, 9u);
  ASSERT_EQ(s.largest.size(), 3u);
  EXPECT_GE(s.largest[0].ns(), s.largest[1].ns());
  EXPECT_GE(s.largest[1].ns(), s.largest[2].ns());
  EXPECT_EQ(s.largest[0].ns(), 9000u);  // after the first (shortest) record
}

TEST(Timeline, TheJsonNamesEveryFieldAndEscapesNames) {
  const std::vector<TimelineRecord> r = {k("void f<\"q\">()", 3, 1000, 2000), k("g\\h", 3, 4000, 5000)};
  const std::string j = timeline_json(summarize_timeline(r, 0, 6000));
  for (const char* field : {"\"window_us\": 6.0", "\"busy_us\": 2.0", "\"lead_us\": 1.0", "\"gaps_us\": 2.0",
                            "\"tail_us\": 1.0", "\"gap_count\": 1", "\"at_us\": 2.0", "\"us\": 2.0",
                            "\"opened_by\": \"void f<\\\"q\\\">()\"", "\"closed_by\": \"g\\\\h\"", "\"id\": 3"}) {
    EXPECT_NE(j.find(field), std::string::npos) << field << " in " << j;
  }
}

}  // namespace
}  // namespace edgevla::bench
