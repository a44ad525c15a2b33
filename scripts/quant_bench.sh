#!/usr/bin/env bash
# int8 against fp32: `tessera quantize` on LeNet-5 (accuracy on Fashion-MNIST's test set, Tessera
# and ONNX Runtime running the same quantized file) and on zoo CNNs (latency of fp32 and int8 in
# Tessera and ONNX Runtime, output error) (tests/bench/quant_bench.py). Installs what is missing,
# builds the `tessera` CLI, exports the zoo models it needs, then prints two tables.
#
# Usage: scripts/quant_bench.sh [--no-build] [quant_bench.py options: --models resnet18,resnet50,mobilenetv2,lenet
#                               --rounds 3 --runs 20 --no-ort]
set -euo pipefail
cd "$(dirname "$0")/.."
models=resnet18,resnet50,mobilenetv2
source scripts/bench_args.sh
bench_args "$@"
bash scripts/setup.sh
bash scripts/npm.sh >/dev/null || echo "quant_bench: onnxruntime-node unavailable; the ORT columns show -"
[ "$build" -eq 0 ] || bash scripts/build.sh release >/dev/null
/usr/bin/python3 tests/zoo/make_zoo.py --models "$models" >/dev/null
exec /usr/bin/python3 tests/bench/quant_bench.py --tessera build/release/cli/tessera "${args[@]}"
