#!/usr/bin/env bash
# Data-parallel benchmark: `mpirun -n 2 tessera train --threads 1` against one process of 1 thread
# (LeNet-5 one epoch, the CIFAR-style ResNet-18 16 steps, the same global batch, runs alternated),
# with the loss drift of 1 against 2 ranks beside eager PyTorch's under the same split
# (tests/bench/dp_bench.py). Installs what is missing, builds the `tessera` CLI, prints one table.
#
# Usage: scripts/dp_bench.sh [--no-build] [dp_bench.py options: --models lenet,resnet18 --ranks 2 --seeds 6
#                            --repeats 3 --no-torch]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_args.sh
bench_args "$@"
bash scripts/setup.sh
[ "$build" -eq 0 ] || bash scripts/build.sh release >/dev/null
exec /usr/bin/python3 tests/bench/dp_bench.py --tessera build/release/cli/tessera "${args[@]}"
