// runtime/util/progress: which reports a long job makes, on a clock the test drives.
#include "runtime/util/progress.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace edgevla {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

struct Seen {
  ProgressReport report;
  std::string text;
  std::int64_t at_ns = 0;
};

// A Progress on a fake clock whose reports land in `seen`.
struct Harness {
  std::int64_t now = 0;
  std::vector<Seen> seen;
  ProgressOptions options(std::int64_t total, ProgressOutput output = ProgressOutput::kLog) {
    ProgressOptions o;
    o.what = "job";
    o.total = total;
    o.output = output;
    o.clock = [this] { return now; };
    o.sink = [this](const ProgressReport& r, std::string_view text) {
      seen.push_back({r, std::string(text), now});
    };
    return o;
  }
};

bool finite_text(const std::string& s) {
  return s.find("nan") == std::string::npos && s.find("inf") == std::string::npos &&
         s.find('-') == std::string::npos;
}

TEST(ProgressTest, LogLinesAtTenthsNoCloserThanTheMinimumInterval) {
  Harness h;
  Progress p(h.options(100));
  for (int i = 0; i < 100; ++i) {  // a tenth per second; lines at most every 2 s
    h.now += kSecond / 10;
    p.add(1);
  }
  p.finish();
  ASSERT_EQ(h.seen.size(), 6u);  // t = 2, 4, 6, 8, 10 s, then the final report
  for (std::size_t i = 0; i + 1 < h.seen.size(); ++i) {
    EXPECT_FALSE(h.seen[i].report.final);
    EXPECT_EQ(h.seen[i].at_ns, static_cast<std::int64_t>(i + 1) * 2 * kSecond);
    EXPECT_EQ(h.seen[i].report.done, static_cast<std::int64_t>(i + 1) * 20);
  }
  EXPECT_TRUE(h.seen.back().report.final);
  EXPECT_EQ(h.seen.back().report.done, 100);
}

TEST(ProgressTest, SlowWorkGetsALineAtEveryTenth) {
  Harness h;
  ProgressOptions o = h.options(1000);
  o.unit = ProgressUnit::kCount;
  Progress p(std::move(o));
  for (int i = 0; i < 1000; ++i) {  // 3 s per tenth
    h.now += 3 * kSecond / 100;
    p.add(1);
  }
  p.finish();
  ASSERT_EQ(h.seen.size(), 11u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(h.seen[static_cast<std::size_t>(i)].report.done, (i + 1) * 100);
  EXPECT_NE(h.seen[4].text.find("50% (500 of 1000 items)"), std::string::npos) << h.seen[4].text;
  EXPECT_NE(h.seen[4].text.find("left"), std::string::npos) << h.seen[4].text;
  EXPECT_EQ(h.seen[10].text.find("left"), std::string::npos) << h.seen[10].text;
}

TEST(ProgressTest, AStalledTenthStillGetsALineEveryInterval) {
  Harness h;
  Progress p(h.options(100));
  for (int i = 0; i < 60; ++i) {  // 1 % per second: a tenth every 10 s, a line every 5 s
    h.now += kSecond;
    p.add(1);
  }
  ASSERT_EQ(h.seen.size(), 12u);
  for (std::size_t i = 0; i < h.seen.size(); ++i)
    EXPECT_EQ(h.seen[i].at_ns, static_cast<std::int64_t>(i + 1) * 5 * kSecond);
}

TEST(ProgressTest, UnknownTotalReportsEveryIntervalWithoutPercentOrTimeLeft) {
  Harness h;
  ProgressOptions o = h.options(-1);
  o.unit = ProgressUnit::kCount;
  o.noun = "messages";
  Progress p(std::move(o));
  for (int i = 0; i < 20; ++i) {
    h.now += kSecond;
    p.add(7);
  }
  p.finish();
  ASSERT_EQ(h.seen.size(), 5u);  // t = 5, 10, 15, 20 s and the final report
  for (const Seen& s : h.seen) {
    EXPECT_EQ(s.report.total, -1);
    EXPECT_EQ(s.text.find('%'), std::string::npos) << s.text;
    EXPECT_EQ(s.text.find("left"), std::string::npos) << s.text;
    EXPECT_TRUE(finite_text(s.text)) << s.text;
  }
  EXPECT_NE(h.seen.back().text.find("140 messages"), std::string::npos) << h.seen.back().text;
}

TEST(ProgressTest, ZeroTotalIsNothingToDoNotADivisionByZero) {
  Harness h;
  Progress p(h.options(0));
  h.now += 3 * kSecond;
  p.add(0);
  p.finish();
  ASSERT_EQ(h.seen.size(), 1u);
  EXPECT_TRUE(h.seen[0].report.final);
  EXPECT_NE(h.seen[0].text.find("nothing to do"), std::string::npos) << h.seen[0].text;
  EXPECT_TRUE(finite_text(h.seen[0].text)) << h.seen[0].text;
  EXPECT_EQ(progress_bar(h.seen[0].report, 4), "[####]");
}

TEST(ProgressTest, ShortWorkSaysNothing) {
  Harness h;
  Progress p(h.options(100));
  for (int i = 0; i < 100; ++i) {
    h.now += kSecond / 1000;
    p.add(1);
  }
  p.finish();
  EXPECT_TRUE(h.seen.empty());
}

TEST(ProgressTest, TotalToldLaterCountsFromThen) {
  Harness h;
  Progress p(h.options(-1));
  p.set_total(50);
  h.now += 3 * kSecond;
  p.set(25);
  ASSERT_EQ(h.seen.size(), 1u);
  EXPECT_EQ(h.seen[0].report.total, 50);
  EXPECT_NE(h.seen[0].text.find("50%"), std::string::npos) << h.seen[0].text;
  p.finish();
  p.finish();  // once only
  EXPECT_EQ(h.seen.size(), 2u);
  EXPECT_EQ(p.done(), 25);
}

TEST(ProgressTest, BarRedrawsAtMostTenTimesASecondAndEndsFull) {
  Harness h;
  Progress p(h.options(1000, ProgressOutput::kBar));
  for (int i = 0; i < 1000; ++i) {  // 1 s in 1 ms steps
    h.now += kSecond / 1000;
    p.add(1);
  }
  p.finish();
  ASSERT_EQ(h.seen.size(), 11u);  // every 100 ms, then the final one
  for (const Seen& s : h.seen) EXPECT_EQ(s.text.front(), '\r');
  EXPECT_NE(h.seen.back().text.find("[" + std::string(30, '#') + "]"), std::string::npos)
      << h.seen.back().text;
  EXPECT_EQ(progress_bar(h.seen[4].report, 10), "[#####-----]");
}

TEST(ProgressTest, BytesShareOneUnitAndGiveARate) {
  ProgressReport r;
  r.done = std::int64_t{3} << 29;  // 1.5 GiB
  r.total = std::int64_t{3} << 30;
  r.elapsed_s = 2;
  const std::string s = format_progress(r, ProgressUnit::kBytes, "");
  EXPECT_EQ(s, "50% (1.5 of 3.0 GiB), 2.0 s, 768.0 MiB/s, ~2.0 s left");
  r.total = -1;
  r.done = 0;
  r.elapsed_s = 0;
  EXPECT_EQ(format_progress(r, ProgressUnit::kBytes, ""), "0 B, 0.0 s");
  EXPECT_EQ(progress_bar(r, 3), "[---]");
}

}  // namespace
}  // namespace edgevla
