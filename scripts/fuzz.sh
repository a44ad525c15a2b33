#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz, built in the sanitizer tree build/asan: clang, ASan +
# UBSan) for SECONDS (default 60) each over its seed corpus, JOBS targets at a time (default 2).
# Exits non-zero when a target finds a crash; the reproducer is left in build/asan/fuzz-artifacts/
# (rerun: build/asan/tests/fuzz/<target> <file>).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
seconds=${1:-60}
jobs=${FUZZ_JOBS:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/build.sh asan >/dev/null
build=$root/build/asan
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"
# fuzz_one EXE: one target over its seeds (tests/fuzz/corpus/<name without _fuzz>); new inputs go to
# build/asan/fuzz-corpus, not into the repository. Its output goes to a log, printed when it ends.
fuzz_one() {
  local exe=$1 name seeds work log
  name=$(basename "$exe")
  seeds=$root/tests/fuzz/corpus/${name%_fuzz}
  # A target without its own seeds shares those of its format (onnx_engine_fuzz: corpus/onnx).
  [[ -d $seeds ]] || seeds=$root/tests/fuzz/corpus/${name%%_*}
  work=$build/fuzz-corpus/${name%_fuzz}
  log=$build/fuzz-logs/$name.log
  mkdir -p "$work"
  if "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$build/fuzz-artifacts/$name-" "$work" "$seeds" >"$log" 2>&1; then
    echo "== $name: ${seconds}s, clean ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs)"
  else
    tail -n 40 "$log"
    echo "== $name: FOUND A CRASH (see $build/fuzz-artifacts/ and $log)"
    return 1
  fi
}
export -f fuzz_one
export root build seconds
targets=("$build"/tests/fuzz/*_fuzz)
[[ -x ${targets[0]} ]] || { echo "fuzz.sh: no fuzz targets in $build/tests/fuzz"; exit 1; }
echo "fuzz.sh: ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1"' _ {}
