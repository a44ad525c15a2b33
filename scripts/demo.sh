#!/usr/bin/env bash
# The README's first command: install, build, and run the main job: inspect the LeNet-5 sample,
# run it through the six stages (writing its output as .npy), show what the compiler did, time it,
# then train it for one epoch on Fashion-MNIST (checkpoint in out/lenet-train) and run the result;
# last, install the Python package (/usr/local/lib/python3.X/dist-packages/tessera) and run the
# trained network again from Python.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh release
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo cmake --install build/release --component python
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
echo
echo "== python3: tessera.InferenceSession on the trained network (the package installed above)"
cd /tmp && /usr/bin/python3 - "$OLDPWD" <<'PY'
import sys, numpy as np, tessera
root = sys.argv[1]
t = tessera.Trainer(f"{root}/samples/lenet.json", optimizer="momentum", record=False)
t.resume(f"{root}/out/lenet-train/epoch-0001.tsc")
sess = tessera.InferenceSession(t.graph(), threads=2)
x = np.random.default_rng(1).random((4, 1, 28, 28), dtype=np.float32)
print("tessera", tessera.__version__, "from", tessera.__file__)
print("predicted classes of 4 random images:", sess.run(None, {"x": x})[0].argmax(1))
PY
