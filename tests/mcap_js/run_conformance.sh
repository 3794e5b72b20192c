#!/usr/bin/env bash
# Reads bags written by edgevla's McapWriter with an independent MCAP reader (@mcap/core, npm).
#
#   tests/mcap_js/run_conformance.sh <make_fixture binary> <build dir>
#
# 1. checks that node (>= 18) and npm are on PATH (scripts/setup installs them);
# 2. runs `npm ci` in tests/mcap_js only when node_modules is missing or older than
#    package-lock.json (so repeat runs are offline and fast; node_modules is gitignored);
# 3. writes {none,lz4,zstd}.mcap and their manifests into a fresh temp dir under <build dir>;
# 4. runs conformance.mjs on each bag, whole and as truncated copies.
# Exits non-zero on any failure; the temp dir is kept then (its path is printed).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -ne 2 ]; then
  echo "usage: $0 <make_fixture binary> <build dir>" >&2
  exit 2
fi
make_fixture="$1"
build="$2"

fail() {
  echo "run_conformance.sh: $*" >&2
  exit 1
}

[ -x "$make_fixture" ] || fail "make_fixture binary '$make_fixture' not found or not executable"
source "$here/npm_ready.sh"
start=$(date +%s)
npm_ready run_conformance.sh

mkdir -p "$build"
work="$(mktemp -d "$build/mcap_js_conformance.XXXXXX")"
"$make_fixture" "$work" || fail "make_fixture failed (bags in $work)"

status=0
for name in none lz4 zstd; do
  for mode in "" --truncated; do
    if ! node "$here/conformance.mjs" $mode "$work/$name.mcap" "$work/$name.json"; then
      echo "run_conformance.sh: FAILED: conformance.mjs $mode $work/$name.mcap" >&2
      status=1
    fi
  done
done

if [ "$status" -ne 0 ]; then
  echo "run_conformance.sh: FAILED; bags and manifests kept in $work" >&2
  exit 1
fi
rm -rf "$work"
echo "run_conformance.sh: all bags pass ($(($(date +%s) - start)) s)"
