#!/usr/bin/env bash
# The README's first command: install, build, and run the main job (for now: inspect and run the
# LeNet-5 sample end to end through the reference kernels, writing its output as .npy).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh release
tessera=build/release/cli/tessera
echo
echo "== tessera info samples/lenet.json"
$tessera info samples/lenet.json
echo
echo "== tessera run samples/lenet.json --dim N=4 --seed 1 --output-dir out/lenet"
$tessera run samples/lenet.json --dim N=4 --seed 1 --output-dir out/lenet
