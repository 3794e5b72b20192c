// libFuzzer target for pi0's norm stats reader (runtime/model/pi0/norm_stats.cpp): openpi's
// norm_stats.json.
//
// Properties on every input: parse_norm_stats never crashes, hangs, leaks or hits UB and a
// rejection has a message; accepted stats keep their invariants (mean and std of one length,
// q01/q99 both or neither, all finite); the stats survive write_norm_stats and a re-parse
// unchanged; normalize/unnormalize with them (both kinds, vectors shorter, equal and longer
// than the stats) either succeed or fail with a message.
//
// Seeds (tests/fuzz/corpus/norm_stats/): files written by write_norm_stats plus variants
// (no quantiles, null quantiles, extra keys, mismatched lengths, NaN).
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/model/pi0/norm_stats.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

using namespace edgevla;
using model::NormKind;
using model::Stats;
constexpr const char* kTarget = "norm_stats_fuzzer";

void check_stats(const Stats& s, const char* which) {
  FUZZ_CHECK(!s.mean.empty() && s.std.size() == s.mean.size(), which);
  FUZZ_CHECK(s.q01.empty() == s.q99.empty(), which);
  FUZZ_CHECK(s.q01.empty() || s.q01.size() == s.mean.size(), which);
  for (const auto* v : {&s.mean, &s.std, &s.q01, &s.q99}) {
    for (double d : *v) FUZZ_CHECK(std::isfinite(d), which);
  }
}

void apply(const Stats& s) {
  for (std::size_t n : {std::size_t{1}, s.size(), s.size() + 3}) {
    if (n > 64) continue;
    std::vector<double> x(n), out(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.25 * static_cast<double>(i) - 1.0;
    std::vector<float> xf(x.begin(), x.end()), outf(n);
    for (NormKind kind : {NormKind::kZScore, NormKind::kQuantile}) {
      for (const Status& st : {model::normalize(x, s, kind, out), model::unnormalize(x, s, kind, out),
                               model::normalize(xf, s, kind, outf), model::unnormalize(xf, s, kind, outf)}) {
        FUZZ_CHECK(st.is_ok() || !st.message().empty(), "");
      }
      std::vector<float> chunk(2 * n, 0.5f), res(2 * n);
      const Status st = model::unnormalize_chunk(chunk, static_cast<std::int64_t>(n), s, kind,
                                                 static_cast<std::int64_t>(n), res);
      FUZZ_CHECK(st.is_ok() || !st.message().empty(), "");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::ScratchDir dir(kTarget);
  static const std::string written = (dir.path() / "norm_stats.json").string();
  auto stats = model::parse_norm_stats(std::string(fuzz::as_text(data, size)), "fuzz/norm_stats.json");
  if (!stats) {
    FUZZ_CHECK(!stats.status().message().empty(), "");
    return 0;
  }
  check_stats(stats->state, "state");
  check_stats(stats->actions, "actions");
  apply(stats->state);
  apply(stats->actions);
  // What a converter writes, the runtime reads back unchanged. (The old file is removed
  // first: rewriting a file in place makes ext4 write it back to disk on close.)
  ::unlink(written.c_str());
  const Status st = model::write_norm_stats(*stats, written);
  FUZZ_CHECK(st.is_ok(), st.to_string());
  auto again = model::load_norm_stats(written);
  FUZZ_CHECK(again.has_value(), again.status().to_string());
  FUZZ_CHECK(*again == *stats, "norm stats changed through write and read");
  return 0;
}
