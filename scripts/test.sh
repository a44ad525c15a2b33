#!/usr/bin/env bash
# The README's second command (and .ci/run): install, build, and run every test through ctest,
# then the tests again under AddressSanitizer + UBSan, then every libFuzzer target for a bounded
# time (FUZZ_SECONDS, default 60 per target; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh
bash scripts/build.sh release
ctest --preset release -j2
bash scripts/build.sh asan
ctest --preset asan -j2
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
