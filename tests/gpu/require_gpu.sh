# Sourced by the GPU test scripts (set -euo pipefail, E and SRC set): exits 77 (ctest: not run)
# where no CUDA GPU is present; else makes the scratch folder $W (removed on exit) with a small
# pi0.5 checkpoint in $W/ck, and enters it.
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "no CUDA GPU on this machine: not run"
  exit 77
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$E" model init --config small --model pi05 --seed 7 --out "$W/ck" >/dev/null
cd "$W"
