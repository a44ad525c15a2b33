#!/usr/bin/env bash
# The README's first command: install, build, and run the main job: inspect the LeNet-5 sample,
# run it through the six stages (writing its output as .npy), show what the compiler did, and time it.
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
echo
echo "== tessera passes samples/lenet.json"
$tessera passes samples/lenet.json
echo
echo "== tessera bench samples/lenet.json --dim N=64 --runs 20"
$tessera bench samples/lenet.json --dim N=64 --runs 20
