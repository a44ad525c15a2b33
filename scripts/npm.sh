#!/usr/bin/env bash
# Installs ONNX Runtime for node (onnxruntime-node, CPU build) into build/npm, and nodejs/npm from
# Debian when the commands are missing. Idempotent: a no-op when both are there. Used by
# scripts/bench.sh (the ORT benchmark), the ctest formats.ort_export (tests/formats/ort_check.js)
# and scripts/test.sh. Prints the NODE_PATH to use on its last line.
#
# Usage: scripts/npm.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# nodejs may come from another source that bundles npm (and conflicts with Debian's npm
# package): working commands are enough.
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "npm: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# onnxruntime-node, CPU build (its install script only fetches GPU binaries, hence --ignore-scripts).
npm_dir=build/npm
if [ ! -f "$npm_dir/node_modules/onnxruntime-node/package.json" ]; then
  echo "npm: installing onnxruntime-node into $npm_dir" >&2
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --ignore-scripts --no-audit --no-fund --loglevel=error \
    onnxruntime-node@1.30.0 >/dev/null
fi
echo "$PWD/$npm_dir/node_modules"
