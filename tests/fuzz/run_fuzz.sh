#!/usr/bin/env bash
# Builds edgevla's fuzz targets with clang (libFuzzer + ASan + UBSan) and fuzzes each for a
# while, starting from its committed seed corpus (tests/fuzz/corpus/<target>/).
#
#   tests/fuzz/run_fuzz.sh [seconds] [build dir] [target ...]
#
# seconds    how long to fuzz each target (default 30); 0 only builds
# build dir  where the fuzz project is built (default $EDGEVLA_FUZZ_BUILD_DIR, else
#            build/fuzz under the repository root)
# target     names as in tests/fuzz/README.md (envelope, mcap, launch, ...); default: all.
#            NAME:N runs N libFuzzer processes for that target (-jobs=N -workers=N, sharing
#            its corpus folder); its runs are then their sum, its exec/s their sum
#
# EDGEVLA_FUZZ_PARALLEL=1 runs the targets at the same time instead of one after another
# (give each as many workers as the machine has cores for it). EDGEVLA_FUZZ_KEEP_CORPUS=1
# keeps <build dir>/corpus/<target>/ from the last run (a campaign over several runs).
#
# Per target it writes <build dir>/logs/<target>.log (libFuzzer's output) and
# <build dir>/results/<target>.txt (key=value: runs, exec_per_sec, cov, ft, corpus, peak_rss_mb,
# seconds, outcome), which bench/fuzz turns into a report. New inputs go to
# <build dir>/corpus/<target>/ (emptied at the start unless kept), never into the committed corpus.
# Exits 0 when every target ran clean, 1 when one found a crash, leak, timeout or OOM (the
# reproducer is left under <build dir>/artifacts/; re-run it: <build dir>/<target>_fuzzer FILE)
# or the build failed, 77 when this machine cannot build libFuzzer targets (no clang, or no
# libFuzzer runtime: apt-get install clang libclang-rt-14-dev); ctest reports 77 as skipped.
# Environment: EDGEVLA_FUZZ_CC / EDGEVLA_FUZZ_CXX pick the compilers (default clang, clang++);
# EDGEVLA_FUZZ_JOBS the build parallelism (default nproc); EDGEVLA_FUZZ_NO_BUILD=1 uses the
# targets already built (ctest builds once, then runs the targets in parallel).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-30}"
build="${2:-${EDGEVLA_FUZZ_BUILD_DIR:-$root/build/fuzz}}"
shift $(($# < 2 ? $# : 2))
all_targets=(envelope descriptor mcap launch control safetensors norm_stats groot_processor
             pi0_tokenizer groot_tokenizer image)
targets=()
declare -A workers=()
for spec in "$@"; do
  t=${spec%%:*}
  n=1
  [ "$spec" != "$t" ] && n=${spec#*:}
  case "$n" in
    '' | *[!0-9]* | 0) echo "run_fuzz.sh: workers must be a whole number > 0, got '$spec'" >&2; exit 2 ;;
  esac
  targets+=("$t")
  workers[$t]=$n
done
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
case "$seconds" in
  '' | *[!0-9]*) echo "run_fuzz.sh: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
    *" $t "*) ;;
    *) echo "run_fuzz.sh: unknown target '$t' (known: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done
cc="${EDGEVLA_FUZZ_CC:-clang}"
cxx="${EDGEVLA_FUZZ_CXX:-clang++}"
jobs="${EDGEVLA_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"  # targets with workers run from their own folder

# Can this machine build a libFuzzer target at all? If not, say so and report "skipped".
can_build() {
  if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "run_fuzz.sh: SKIPPED: no $cxx on this machine (apt-get install clang libclang-rt-14-dev)" >&2
    return 1
  fi
  local probe="$build/probe-$$"
  mkdir -p "$probe"
  printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
    >"$probe/probe.cpp"
  if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" >"$probe/probe.log" 2>&1; then
    cat "$probe/probe.log" >&2
    rm -rf "$probe"
    echo "run_fuzz.sh: SKIPPED: $cxx cannot link libFuzzer + ASan + UBSan here (apt-get install libclang-rt-14-dev)" >&2
    return 1
  fi
  rm -rf "$probe"
}
built_all=1
for t in "${targets[@]}"; do [ -x "$build/${t}_fuzzer" ] || built_all=0; done
if [ "${EDGEVLA_FUZZ_NO_BUILD:-0}" != 1 ] || [ "$built_all" -eq 0 ]; then
  can_build || exit 77
fi

start=$(date +%s)
if [ "${EDGEVLA_FUZZ_NO_BUILD:-0}" != 1 ]; then
  echo "run_fuzz.sh: building the fuzz project in $build (${targets[*]})"
  build_targets=()
  for t in "${targets[@]}"; do build_targets+=("${t}_fuzzer"); done
  [[ " ${targets[*]} " == *" envelope "* || " ${targets[*]} " == *" descriptor "* ]] && build_targets+=(make_corpus)
  # Ninja compiles every target's objects at once (make waits for each library in turn):
  # half the build time on 2 cores. A build dir keeps the generator it was made with.
  generator=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  if ! { CC="$cc" CXX="$cxx" cmake "${generator[@]}" -S "$root/tests/fuzz" -B "$build" &&
         cmake --build "$build" -j "$jobs" --target "${build_targets[@]}"; } >"$build/build.log" 2>&1; then
    cat "$build/build.log" >&2
    echo "run_fuzz.sh: building the fuzz project FAILED" >&2
    exit 1
  fi
  echo "run_fuzz.sh: built in $(($(date +%s) - start)) s"
fi
[ "$seconds" -eq 0 ] && exit 0

mkdir -p "$build/logs" "$build/results" "$build/corpus"
# Scratch folders of the targets (tokenizer files, launch files) live in the build dir, so a
# run leaves nothing in /tmp even when a target is killed.
export TMPDIR="$build/tmp"
mkdir -p "$TMPDIR"
# Fuzzes one target; writes results/<t>.txt. Returns non-zero on a finding.
fuzz_target() {
  local t=$1 n=${workers[$1]:-1}
  local bin="$build/${t}_fuzzer"
  if [ ! -x "$bin" ]; then
    echo "run_fuzz.sh: $bin is not built (run without EDGEVLA_FUZZ_NO_BUILD=1)" >&2
    return 1
  fi
  local work="$build/corpus/$t"
  local artifacts="$build/artifacts/$t-$(date +%Y%m%d-%H%M%S)-$$"
  # A fresh corpus each run unless EDGEVLA_FUZZ_KEEP_CORPUS=1 (a campaign over several runs).
  [ "${EDGEVLA_FUZZ_KEEP_CORPUS:-0}" = 1 ] || rm -rf "$work"
  mkdir -p "$work" "$artifacts"
  local extra=()
  local seeds=("$root/tests/fuzz/corpus/$t")
  local max_len=16384
  case "$t" in
    envelope | descriptor)
      # Seeds that follow the encoder as it is now, and the envelope's keys as a dictionary.
      "$build/make_corpus" "$work" "$build/$t.dict" >/dev/null
      extra+=(-dict="$build/$t.dict")
      max_len=65536 ;;
    # A chunk may claim 32768 uncompressed bytes per zstd byte; 32 KB inputs keep every claim
    # the reader accepts under libFuzzer's 2 GB malloc limit.
    mcap) max_len=32768 ;;
    image) max_len=65536 ;;
  esac
  local log="$build/logs/$t.log"
  local jobs_dir="$build/logs/$t.jobs"
  rm -rf "$jobs_dir"
  local logs=("$log")
  if [ "$n" -gt 1 ]; then
    # libFuzzer writes each job's output to fuzz-<job>.log in the current folder.
    mkdir -p "$jobs_dir"
    extra+=(-jobs="$n" -workers="$n")
  fi
  local status=0
  # -timeout: one input taking 10 s is a hang. -rss_limit_mb: a decoder that allocates what a
  # hostile header claims shows up as an OOM (libFuzzer's malloc limit is the same 2 GB).
  local t0
  t0=$(date +%s)
  (
    [ "$n" -gt 1 ] && cd "$jobs_dir"
    exec "$bin" \
      -max_total_time="$seconds" \
      -rss_limit_mb=2048 \
      -max_len="$max_len" \
      -timeout=10 \
      -artifact_prefix="$artifacts/" \
      -print_final_stats=1 \
      "${extra[@]}" \
      "$work" "${seeds[@]}"
  ) >"$log" 2>&1 || status=$?
  local elapsed=$(($(date +%s) - t0))
  if [ "$n" -gt 1 ]; then
    logs=("$jobs_dir"/fuzz-*.log)
    # A job that found something exits non-zero; the parent only says so.
    grep -q 'exited with exit code [1-9]' "$log" && status=1
  fi

  local runs=0 eps=0 rss=0 cov=0 ft=0 corp=0 l v last
  for l in "${logs[@]}"; do
    [ -f "$l" ] || continue
    v=$(sed -n 's/^stat::number_of_executed_units: *//p' "$l" | tail -n 1); runs=$((runs + ${v:-0}))
    v=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$l" | tail -n 1); eps=$((eps + ${v:-0}))
    v=$(sed -n 's/^stat::peak_rss_mb: *//p' "$l" | tail -n 1); [ "${v:-0}" -gt "$rss" ] && rss=$v
    # Coverage: the largest any job reached (they share one corpus).
    last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$l" | tail -n 1 || true)
    v=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last"); [ "${v:-0}" -gt "$cov" ] && cov=$v
    v=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last"); [ "${v:-0}" -gt "$ft" ] && ft=$v
    v=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last"); [ "${v:-0}" -gt "$corp" ] && corp=$v
  done
  local outcome=ok
  if [ "$status" -ne 0 ]; then
    if grep -qs 'ERROR: LeakSanitizer' "${logs[@]}"; then outcome=leak
    elif grep -qs 'ERROR: libFuzzer: timeout' "${logs[@]}"; then outcome=timeout
    elif grep -qs 'out-of-memory' "${logs[@]}"; then outcome=oom
    else outcome=crash; fi
  fi
  cat >"$build/results/$t.txt" <<RESULT
target=$t
seconds=$elapsed
workers=$n
runs=$runs
exec_per_sec=$eps
cov=$cov
ft=$ft
corpus=$corp
peak_rss_mb=$rss
outcome=$outcome
RESULT
  echo "run_fuzz.sh: $t: $outcome, $runs runs in $elapsed s ($eps exec/s, $n worker(s)), cov $cov ft $ft, corpus $corp"
  if [ "$status" -ne 0 ]; then
    echo "run_fuzz.sh: $t FAILED ($outcome, exit $status); the end of its log ($log):" >&2
    for l in "${logs[@]}"; do
      grep -qs -E 'ERROR|out-of-memory|timeout' "$l" && { echo "--- $l" >&2; tail -n 60 "$l" >&2; }
    done
    echo "run_fuzz.sh: reproducer in $artifacts:" >&2
    ls -l "$artifacts" >&2 || true
    return 1
  fi
  rmdir "$artifacts" 2>/dev/null || true  # keep only folders that hold something
  return 0
}

failed=0
if [ "${EDGEVLA_FUZZ_PARALLEL:-0}" = 1 ]; then
  pids=()
  for t in "${targets[@]}"; do
    fuzz_target "$t" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
else
  for t in "${targets[@]}"; do fuzz_target "$t" || failed=1; done
fi
rmdir "$build/artifacts" 2>/dev/null || true
echo "run_fuzz.sh: ${#targets[@]} target(s), $(($(date +%s) - start)) s end to end"
exit "$failed"
