#include "runtime/util/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "runtime/util/clock.hpp"
#include "runtime/util/log.hpp"

namespace edgevla {
namespace {

std::string printf_string(const char* format, double a) {
  char b[64];
  std::snprintf(b, sizeof b, format, a);
  return b;
}

// A binary-prefixed byte amount with the scale of `scale_of` (so "1.2 of 2.7 GiB" share a unit).
std::string bytes_in(double v, double scale_of, bool with_unit) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double scale = 1;
  while (u < 4 && scale_of >= scale * 1024) {
    scale *= 1024;
    ++u;
  }
  std::string s = u == 0 ? printf_string("%.0f", v) : printf_string("%.1f", v / scale);
  return with_unit ? s + " " + kUnits[u] : s;
}

std::string amount(double v, double scale_of, ProgressUnit unit, bool with_unit) {
  switch (unit) {
    case ProgressUnit::kBytes:
      return bytes_in(v, scale_of, with_unit);
    case ProgressUnit::kNanoseconds:
      return printf_string("%.1f", v * 1e-9) + (with_unit ? " s" : "");
    case ProgressUnit::kCount:
      break;
  }
  return printf_string("%.0f", v);
}

std::string seconds(double s) { return printf_string(s < 10 ? "%.1f s" : "%.0f s", s); }

}  // namespace

std::string format_progress(const ProgressReport& r, ProgressUnit unit, std::string_view noun) {
  const auto done = static_cast<double>(r.done);
  const std::string suffix =
      unit == ProgressUnit::kBytes || noun.empty() ? "" : " " + std::string(noun);
  std::string s;
  if (r.total > 0) {
    const auto total = static_cast<double>(r.total);
    const double percent = std::clamp(100.0 * done / total, 0.0, 100.0);
    s = printf_string("%.0f%%", std::floor(percent)) + " (" + amount(done, total, unit, false) +
        " of " + amount(total, total, unit, true) + suffix + ")";
  } else if (r.total == 0) {
    s = "nothing to do";
  } else {
    s = amount(done, done, unit, true) + suffix;
  }
  s += ", " + seconds(r.elapsed_s);
  if (r.elapsed_s > 0 && r.done > 0 && unit != ProgressUnit::kNanoseconds) {
    const double rate = done / r.elapsed_s;
    s += ", " + amount(rate, rate, unit, true) +
         (unit == ProgressUnit::kBytes ? "/s" : suffix + "/s");
  }
  if (!r.final && r.total > 0 && r.done > 0 && r.done < r.total) {
    s += ", ~" + seconds(r.elapsed_s * static_cast<double>(r.total - r.done) / done) + " left";
  }
  return s;
}

std::string progress_bar(const ProgressReport& r, int width) {
  width = std::max(width, 1);
  int filled = 0;
  if (r.total > 0) {
    filled = static_cast<int>(
        std::clamp<double>(static_cast<double>(r.done) / static_cast<double>(r.total), 0, 1) *
        width);
  } else if (r.total == 0 && r.final) {
    filled = width;
  }
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(width - filled), '-') + "]";
}

Progress::Progress(ProgressOptions options) : o_(std::move(options)) {
  if (!o_.clock) o_.clock = [] { return steady_now_ns(); };
  bar_ = o_.output == ProgressOutput::kBar ||
         (o_.output == ProgressOutput::kAuto && ::isatty(STDERR_FILENO) == 1);
  start_ns_ = last_ns_ = o_.clock();
}

Progress::~Progress() {
  std::lock_guard lock(mu_);
  if (drawn_ && !o_.sink) std::fputc('\n', stderr);
}

void Progress::set_total(std::int64_t total) {
  std::lock_guard lock(mu_);
  o_.total = total;
}

void Progress::add(std::int64_t n) {
  std::lock_guard lock(mu_);
  update(done_ + n);
}

void Progress::set(std::int64_t done) {
  std::lock_guard lock(mu_);
  update(done);
}

std::int64_t Progress::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  const std::int64_t elapsed = o_.clock() - start_ns_;
  if (bar_ ? drawn_ || elapsed >= o_.bar_interval_ns : lines_ > 0 || elapsed >= o_.min_interval_ns)
    emit(true);
  if (bar_ && drawn_ && !o_.sink) std::fputc('\n', stderr);
  drawn_ = false;
}

void Progress::update(std::int64_t done) {
  done_ = done;
  if (finished_) return;
  const std::int64_t now = o_.clock();
  const std::int64_t since = now - last_ns_;
  if (bar_) {
    if (since >= o_.bar_interval_ns) emit(false);
    return;
  }
  const std::int64_t tenth = o_.total > 0 ? std::min<std::int64_t>(10, done_ * 10 / o_.total) : 0;
  if (since >= o_.interval_ns || (tenth > last_tenth_ && since >= o_.min_interval_ns)) emit(false);
}

void Progress::emit(bool final) {
  const std::int64_t now = o_.clock();
  ProgressReport r;
  r.done = done_;
  r.total = o_.total;
  r.elapsed_s = static_cast<double>(now - start_ns_) * 1e-9;
  r.final = final;
  last_ns_ = now;
  last_tenth_ = o_.total > 0 ? std::min<std::int64_t>(10, done_ * 10 / o_.total) : 0;
  ++lines_;
  const std::string text = format_progress(r, o_.unit, o_.noun);
  if (bar_) {
    const std::string line = "\r" + o_.what + " " + progress_bar(r, 30) + " " + text + "\x1b[K";
    drawn_ = true;
    if (o_.sink) {
      o_.sink(r, line);
    } else {
      std::fputs(line.c_str(), stderr);
      std::fflush(stderr);
    }
    return;
  }
  const std::string line = o_.what + ": " + (final ? "done, " : "") + text;
  if (o_.sink) {
    o_.sink(r, line);
  } else {
    logger().info("{}", line);
  }
}

}  // namespace edgevla
