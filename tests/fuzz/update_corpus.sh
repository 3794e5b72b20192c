#!/usr/bin/env bash
# Regenerates the committed seed corpora under tests/fuzz/corpus/ from edgevla's own writers
# (make_corpus: envelopes, also the descriptor target's seeds; make_seeds: every other
# target). Run it after a format change, review `git status tests/fuzz/corpus`, commit.
# Inputs a fuzzer found that crashed a decoder live beside the seeds as crash-<target>-*
# files; they are kept.
#
#   tests/fuzz/update_corpus.sh [build dir]      (default build/fuzz)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/fuzz}"
CC="${EDGEVLA_FUZZ_CC:-clang}" CXX="${EDGEVLA_FUZZ_CXX:-clang++}" cmake -S "$root/tests/fuzz" -B "$build" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target make_corpus make_seeds >/dev/null
corpus="$root/tests/fuzz/corpus"
for t in envelope descriptor mcap safetensors norm_stats groot_processor pi0_tokenizer groot_tokenizer \
         image control launch; do
  mkdir -p "$corpus/$t"
  find "$corpus/$t" -maxdepth 1 -name 'seed_*' -delete
done
"$build/make_corpus" "$corpus/envelope"
"$build/make_corpus" "$corpus/descriptor"
"$build/make_seeds" "$corpus" "$root"
du -sh "$corpus"
