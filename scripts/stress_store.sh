#!/usr/bin/env bash
# The insight store's stress harness, long form (the short form is the ctest insight.store_stress):
# every writer and reader at once on one database, processes killed at random, the integrity and
# the committed records checked after every round.
#   scripts/stress_store.sh [SECONDS (default 3600)] [more stress_store.py flags]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3600}
shift || true
build=build/release
[ -x "$build/cli/tessera" ] || bash scripts/build.sh release
mpi=()
command -v mpirun >/dev/null && mpi=(--mpi)
echo "stress_store: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, ${seconds} s"
PYTHONPATH="$PWD/$build/python" exec /usr/bin/python3 tests/insight/stress_store.py --tessera "$build/cli/tessera" \
  --root "$PWD" --seconds "$seconds" "${mpi[@]}" "$@"
