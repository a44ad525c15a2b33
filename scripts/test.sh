#!/usr/bin/env bash
# The README's second command (and .ci/run): install, build, and run every test through ctest,
# then the tests again in the sanitizer tree (clang, AddressSanitizer + UBSan, asserts on), then
# every libFuzzer target of that tree for a bounded time (FUZZ_SECONDS, default 60 per target, two
# at a time; scripts/fuzz.sh). Prints one line per phase with its seconds, and the total last.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
phases=()
# record NAME T0: notes "NAME  SECONDS s" for the phase that began at T0 (date +%s).
record() {
  phases+=("$(printf '%-16s %5d s' "$1" $(( $(date +%s) - $2 )))")
  echo "test.sh: ${phases[-1]}"
}
# phase NAME COMMAND...: runs the command and records its time.
phase() {
  local name=$1 t0
  t0=$(date +%s)
  shift
  "$@"
  record "$name" "$t0"
}
t0=$(date +%s)
bash scripts/setup.sh
# ONNX Runtime for node, for the export check (formats.ort_export skips, exit 77, without it).
if NODE_PATH=$(bash scripts/npm.sh | tail -1); then export NODE_PATH; else echo "test.sh: onnxruntime-node not installed; formats.ort_export will skip"; fi
record install "$t0"
phase "release build" bash scripts/build.sh release
# The zoo's models, inputs and PyTorch's outputs (build/zoo, kept between runs), for zoo.* tests.
phase "zoo export" /usr/bin/python3 tests/zoo/make_zoo.py --out build/zoo
# The second zoo: models as other tools write them (build/zoo/wild), for zoo.wild_matches_ort.
phase "wild zoo export" /usr/bin/python3 tests/zoo/make_wild.py --out build/zoo/wild
phase "release tests" ctest --preset release -j2
phase "sanitizer build" bash scripts/build.sh asan
phase "sanitizer tests" ctest --preset asan -j2
phase fuzz bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
echo "test.sh: phase times"
printf '  %s\n' "${phases[@]}"
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
