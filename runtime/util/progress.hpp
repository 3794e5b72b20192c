// Progress of long work (writing a checkpoint, uploading weights, playing or replaying a bag):
// a bar redrawn in place when stderr is a terminal, and otherwise a log line at each tenth of
// the work (at most one per `min_interval_ns`) or every `interval_ns` while it advances, so a
// log of a long job says it is alive without flooding. In a log, work shorter than
// `min_interval_ns` says nothing at all; on a terminal the bar appears after `bar_interval_ns`.
// One implementation for every long job in edgevla.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace edgevla {

enum class ProgressUnit { kBytes, kCount, kNanoseconds };
enum class ProgressOutput { kAuto, kBar, kLog };  // kAuto: a bar when stderr is a terminal

// One report: what the bar shows or a log line says.
struct ProgressReport {
  std::int64_t done = 0;
  std::int64_t total = -1;  // < 0: unknown
  double elapsed_s = 0;
  bool final = false;  // the report of finish()
};

struct ProgressOptions {
  std::string what;         // names the work: "model init out/pi05"
  std::int64_t total = -1;  // < 0: unknown (set_total() may tell it later)
  ProgressUnit unit = ProgressUnit::kBytes;
  std::string noun = "items";  // kCount's unit: "messages", "inputs"
  ProgressOutput output = ProgressOutput::kAuto;
  std::int64_t min_interval_ns = 2'000'000'000;  // log lines: never closer than this
  std::int64_t interval_ns = 5'000'000'000;      // log lines: at least this often while advancing
  std::int64_t bar_interval_ns = 100'000'000;    // bar: redrawn at most this often
  // Tests: a steady clock in ns (default: the process's), and a sink that takes every report
  // with its text instead of the terminal or the log.
  std::function<std::int64_t()> clock;
  std::function<void(const ProgressReport&, std::string_view text)> sink;
};

class Progress final {
 public:
  explicit Progress(ProgressOptions options);
  // Ends a drawn bar's line (so what follows starts on its own); reports nothing more.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set_total(std::int64_t total);
  void add(std::int64_t n);
  void set(std::int64_t done);
  // The last report (a log line only when the work took min_interval_ns or more, or when lines
  // were written before). Once; later calls do nothing.
  void finish();
  std::int64_t done() const;

 private:
  void update(std::int64_t done);  // mu_ held
  void emit(bool final);           // mu_ held

  ProgressOptions o_;
  bool bar_ = false;
  mutable std::mutex mu_;
  std::int64_t done_ = 0;
  std::int64_t start_ns_ = 0;
  std::int64_t last_ns_ = 0;     // last line or bar drawn
  std::int64_t last_tenth_ = 0;  // the tenth of the work the last line reported
  int lines_ = 0;
  bool drawn_ = false;  // a bar line is open on the terminal
  bool finished_ = false;
};

// "45% (1.2 of 2.7 GiB), 12.3 s, 98.0 MB/s, ~15 s left", "1.2 GiB, 12.3 s" (unknown total).
std::string format_progress(const ProgressReport& report, ProgressUnit unit, std::string_view noun);
// "[#########-----------]" of `width` cells; empty brackets for an unknown total.
std::string progress_bar(const ProgressReport& report, int width);

}  // namespace edgevla
