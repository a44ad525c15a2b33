#!/usr/bin/env bash
# Configures and builds a preset (default: release) with Ninja and ccache.
#   scripts/build.sh [release|asan|debug]
# ccache is set up so that a clean clone in another folder reuses what earlier builds of the same
# sources cached: paths are rewritten relative to the repository root (base_dir), the build folder
# stays out of the hash (hash_dir), and the cache is sized for the release and sanitizer trees.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
export CCACHE_BASEDIR=$PWD
export CCACHE_NOHASHDIR=1
# pch_defines,time_macros: what ccache needs to cache compiles that use a precompiled header;
# include_file_*: a fresh clone's files are all "new", which would otherwise disable direct mode.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-12G}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
