#!/usr/bin/env bash
# Foxglove's view of edgevla bags, checked with readers no one here wrote (@mcap/core,
# @foxglove/schemas; tests/mcap_js/foxglove.mjs says what is asserted).
#
#   tests/mcap_js/run_foxglove.sh <make_foxglove_fixture binary> <edgevla binary> <build dir>
#
# 1. node/npm and `npm ci` as run_conformance.sh does (node_modules reused when up to date);
# 2. make_foxglove_fixture writes source.mcap, nocamera.mcap, recorded.mcap and a manifest
#    foreign.mcap (no edgevla channel) into a fresh temp dir under <build dir>;
# 3. `edgevla bag export --foxglove` converts source.mcap with jpeg, png and raw frames, and
#    nocamera.mcap; foxglove.mjs checks each export and recorded.mcap;
# 4. the export's errors: an output equal to the input, a bag with no edgevla channel, and no
#    --foxglove, each exit 1 with a message naming the fix.
# Exits non-zero on any failure; the temp dir is kept then (its path is printed).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -ne 3 ]; then
  echo "usage: $0 <make_foxglove_fixture binary> <edgevla binary> <build dir>" >&2
  exit 2
fi
fixture="$1"
edgevla="$2"
build="$3"

fail() {
  echo "run_foxglove.sh: $*" >&2
  exit 1
}

[ -x "$fixture" ] || fail "make_foxglove_fixture binary '$fixture' not found or not executable"
[ -x "$edgevla" ] || fail "edgevla binary '$edgevla' not found or not executable"
source "$here/npm_ready.sh"
npm_ready run_foxglove.sh

mkdir -p "$build"
work="$(mktemp -d "$build/mcap_js_foxglove.XXXXXX")"
"$fixture" "$work" || fail "make_foxglove_fixture failed (files in $work)"

check() {  # check <bag> <mode>
  node "$here/foxglove.mjs" "$1" "$work/manifest.json" "$2" || fail "foxglove.mjs $2 failed on $1 (files kept in $work)"
}
for images in jpeg png raw; do
  "$edgevla" bag export --foxglove "$work/source.mcap" "$work/export_$images.mcap" --images "$images" \
    >"$work/export_$images.log" 2>&1 || { cat "$work/export_$images.log" >&2; fail "bag export --images $images failed"; }
  check "$work/export_$images.mcap" "$images"
done
"$edgevla" bag export --foxglove "$work/nocamera.mcap" "$work/export_nocamera.mcap" >"$work/nocamera.log" 2>&1 ||
  { cat "$work/nocamera.log" >&2; fail "bag export of a bag with no camera failed"; }
grep -q "no camera frames" "$work/nocamera.log" || fail "bag export of a bag with no camera did not say it wrote no image channel"
check "$work/export_nocamera.mcap" nocamera
check "$work/recorded.mcap" recorded
# An export of an export: the derived channels are made anew, not doubled.
"$edgevla" bag export --foxglove "$work/export_png.mcap" "$work/export_again.mcap" --images png >/dev/null 2>&1 ||
  fail "bag export of an exported bag failed"
check "$work/export_again.mcap" png

expect_error() {  # expect_error <what> <text the message must hold> <args...>
  local what="$1" text="$2"
  shift 2
  local rc=0
  "$edgevla" bag export "$@" >"$work/error.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "bag export $what: exit 0, expected an error"
  grep -q -- "$text" "$work/error.log" || { cat "$work/error.log" >&2; fail "bag export $what: the error does not say '$text'"; }
}
expect_error "onto its input" "is the input" --foxglove "$work/source.mcap" "$work/source.mcap"
expect_error "of a bag with no edgevla channel" "no edgevla channels" --foxglove "$work/foreign.mcap" "$work/x.mcap"
expect_error "without --foxglove" "--foxglove" "$work/source.mcap" "$work/y.mcap"
[ ! -e "$work/y.mcap" ] || fail "bag export without --foxglove wrote a file"

rm -rf "$work"
echo "run_foxglove.sh: all Foxglove checks pass"
