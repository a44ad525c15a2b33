#!/usr/bin/env bash
# The README's second command (and .ci/run): install, build, and run every test through ctest,
# then the tests again under AddressSanitizer + UBSan, then every libFuzzer target for a bounded
# time (FUZZ_SECONDS, default 60 per target; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh
bash scripts/build.sh release
# ONNX Runtime for node, for the export check (formats.ort_export skips, exit 77, without it).
if NODE_PATH=$(bash scripts/npm.sh | tail -1); then export NODE_PATH; else echo "test.sh: onnxruntime-node not installed; formats.ort_export will skip"; fi
ctest --preset release -j2
bash scripts/build.sh asan
ctest --preset asan -j2
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
