#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, with clang, ASan + UBSan) in build/fuzz and runs each
# for SECONDS (default 60) over its seed corpus. Exits non-zero when a target finds a crash; the
# reproducer is left in build/fuzz/artifacts/ (rerun: build/fuzz/<target> <file>).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/fuzz
cd "$root"
if [[ ! -f $build/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j"${FUZZ_JOBS:-2}"
mkdir -p "$build/artifacts"
status=0
for exe in "$build"/*_fuzz; do
  name=$(basename "$exe")                 # onnx_fuzz -> corpus tests/fuzz/corpus/onnx
  seeds=$root/tests/fuzz/corpus/${name%_fuzz}
  work=$build/corpus/${name%_fuzz}        # new inputs go here, not into the repository
  mkdir -p "$work"
  echo "== $name: ${seconds}s over $seeds"
  if ! "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/$name-" "$work" "$seeds"; then
    echo "== $name: FOUND A CRASH (see $build/artifacts/)"
    status=1
  fi
done
exit $status
