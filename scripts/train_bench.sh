#!/usr/bin/env bash
# Side-by-side training benchmark: Tessera vs eager PyTorch (Debian's python3-torch 1.13) training
# LeNet-5, the MLP, a CIFAR-style ResNet-18 and a character transformer LM (samples/) with the same
# initial weights, data order, optimizer, schedule, batch and threads, losses compared step by step
# (tests/bench/train_bench.py, tests/bench/README.md). Installs what is missing, builds the
# `tessera` CLI, then prints one table.
#
# Usage: scripts/train_bench.sh [--no-build] [train_bench.py options: --models lenet,mlp,resnet18,charlm
#                               --onnx --threads 2 --seed 0 --repeats 1 --steps N --torch-noise --json-out F]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_args.sh
bench_args "$@"
bash scripts/setup.sh
missing=()
for p in python3-torch python3-numpy libopenblas0-openmp; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "train_bench: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$build" -eq 0 ] || bash scripts/build.sh release >/dev/null
exec /usr/bin/python3 tests/bench/train_bench.py --tessera build/release/cli/tessera "${args[@]}"
