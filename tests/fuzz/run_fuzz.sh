#!/usr/bin/env bash
# Builds the envelope fuzzer with clang (libFuzzer + ASan + UBSan), generates a fresh seed
# corpus of valid envelopes and fuzzes msgs/wire.cpp's decoder for a while.
#
#   tests/fuzz/run_fuzz.sh [seconds] [build dir]
#
# seconds    how long to fuzz (default 30); e.g. 600 for a longer run on demand
# build dir  where the fuzz project is built (default $EDGEVLA_FUZZ_BUILD_DIR, else
#            build/fuzz under the repository root)
# Exits non-zero when the build fails or the fuzzer finds a crash, leak, timeout or OOM;
# the reproducer is left under <build dir>/artifacts/ (re-run it: <build dir>/envelope_fuzzer FILE).
# Environment: EDGEVLA_FUZZ_CC / EDGEVLA_FUZZ_CXX pick the compilers (default clang, clang++);
# EDGEVLA_FUZZ_JOBS the build parallelism (default nproc).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-30}"
build="${2:-${EDGEVLA_FUZZ_BUILD_DIR:-$root/build/fuzz}}"
case "$seconds" in
  '' | *[!0-9]*) echo "run_fuzz.sh: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac
jobs="${EDGEVLA_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"

start=$(date +%s)
echo "run_fuzz.sh: building the fuzz project in $build"
mkdir -p "$build"
if ! { CC="${EDGEVLA_FUZZ_CC:-clang}" CXX="${EDGEVLA_FUZZ_CXX:-clang++}" \
         cmake -S "$root/tests/fuzz" -B "$build" &&
       cmake --build "$build" -j "$jobs"; } >"$build/build.log" 2>&1; then
  cat "$build/build.log" >&2
  echo "run_fuzz.sh: building the fuzz project FAILED" >&2
  exit 1
fi
built=$(date +%s)
echo "run_fuzz.sh: built in $((built - start)) s"

corpus="$build/corpus"
# One artifacts folder per run, so a reproducer from an earlier (longer) run is never lost.
artifacts="$build/artifacts/$(date +%Y%m%d-%H%M%S)-$$"
rm -rf "$corpus"
mkdir -p "$corpus" "$artifacts"
"$build/make_corpus" "$corpus" "$build/envelope.dict"

log="$build/fuzz.log"
echo "run_fuzz.sh: fuzzing for $seconds s (log: $log)"
status=0
# -timeout: one input taking 10 s is a hang. -rss_limit_mb: a decoder that allocates by what a
# hostile header claims shows up as an OOM. -max_len: larger than any real envelope of note.
"$build/envelope_fuzzer" \
  -max_total_time="$seconds" \
  -rss_limit_mb=2048 \
  -max_len=65536 \
  -timeout=10 \
  -dict="$build/envelope.dict" \
  -artifact_prefix="$artifacts/" \
  -print_final_stats=1 \
  "$corpus" >"$log" 2>&1 || status=$?

# The final stats line ("#N DONE cov: ... exec/s: ...") and the executions summary.
grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true
grep -E '^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
if [ "$status" -ne 0 ]; then
  echo "run_fuzz.sh: the fuzzer FAILED (exit $status); the end of its log:" >&2
  tail -n 60 "$log" >&2
  echo "run_fuzz.sh: reproducers in $artifacts:" >&2
  ls -l "$artifacts" >&2 || true
  exit 1
fi
rmdir "$artifacts" 2>/dev/null || true  # keep only folders that hold something
echo "run_fuzz.sh: no crash, leak or timeout in $seconds s ($(($(date +%s) - start)) s end to end)"
