#!/usr/bin/env bash
# Configures and builds a preset (default: release) with Ninja and ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
