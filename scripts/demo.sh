#!/usr/bin/env bash
# The README's first command: install, build, and run the main job: inspect the LeNet-5 sample,
# run it through the six stages (writing its output as .npy), show what the compiler did, time it,
# then train it for one epoch on Fashion-MNIST (checkpoint in out/lenet-train) and run the result.
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
echo
echo "== tessera train samples/lenet.json --data /usr/share/datasets/fashion-mnist --epochs 1 ..."
$tessera train samples/lenet.json --data /usr/share/datasets/fashion-mnist --epochs 1 --batch 64 \
    --lr 0.01 --optimizer momentum --threads 2 --checkpoint-dir out/lenet-train
echo
echo "== tessera run samples/lenet.json --checkpoint out/lenet-train/epoch-0001.tsc --dim N=4 --seed 1"
$tessera run samples/lenet.json --checkpoint out/lenet-train/epoch-0001.tsc --dim N=4 --seed 1
