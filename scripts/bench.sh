#!/usr/bin/env bash
# Side-by-side benchmark of Tessera against ONNX Runtime on the zoo: real architectures exported from
# PyTorch (tests/bench/README.md, tests/zoo/). Installs what is missing, builds the `tessera` CLI,
# exports the zoo once into build/zoo, then prints one table (tests/bench/compare.py): the CPU and
# its ISA first, Tessera/ORT per model, the geometric mean, peak memory of both, reference steps.
#
# Usage: scripts/bench.sh [--threads N] [--runs R] [--rounds K] [--models a,b] [--no-build]
#                         [--batch N] [--bf16] [--ort-only] [--torch] [--json-out FILE]
#   --threads  threads for every engine: Tessera, ORT intra-op, PyTorch (default 2)
#   --runs     timed runs per engine per round (default 20); --rounds interleaved rounds (default 3)
#   --json-out FILE (or --json FILE): every figure as JSON, for later comparison
#   --models   comma-separated subset of the zoo (default: all of it; make_zoo.py --list names them)
#   --batch    the zoo exported at batch N (into build/zoo-bN; the detectors take one image: left out)
#   --bf16     also time Tessera with --precision bf16 in the same rounds (CPUs with AVX-512 BF16 or
#              AMX): columns bf16 ms, fp32/bf16 and its difference from PyTorch's f32 output
#   --no-build use build/release/cli/tessera as it is; --ort-only skip Tessera altogether
#   --torch    also time eager PyTorch in the same rounds (two more columns)
set -euo pipefail
cd "$(dirname "$0")/.."

threads=2 runs=20 rounds=3 models= batch=
build=1 extra=()
usage() { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --threads|--runs|--rounds|--models|--json-out|--json|--batch)
      [ $# -ge 2 ] || { echo "bench: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --threads) threads=$2 ;; --runs) runs=$2 ;; --rounds) rounds=$2 ;; --models) models=$2 ;;
        --json-out|--json) extra+=(--json-out "$2") ;;
        --batch) batch=$2 ;;
      esac
      shift 2 ;;
    --no-build) build=0; shift ;;
    --ort-only) extra+=(--ort-only); build=0; shift ;;
    --torch) extra+=(--torch); shift ;;
    --bf16) extra+=(--bf16); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$threads" "$runs" "$rounds" ${batch:+"$batch"}; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench: --threads, --runs, --rounds, --batch take positive integers" >&2; exit 2; }
done
zoo=build/zoo
[ -z "$batch" ] || zoo=build/zoo-b$batch

# 1. Debian packages (idempotent, as scripts/setup.sh); node and npm come with step 2.
missing=()
for p in python3-torch python3-torchvision python3-numpy libopenblas0-openmp; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bench: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) ;;
  *) echo "bench: warning: libblas.so.3 is $blas, not OpenBLAS: PyTorch's matmuls will be slow" \
          "(update-alternatives --config libblas.so.3-x86_64-linux-gnu)" >&2 ;;
esac

# 2. node, npm and onnxruntime-node (CPU build) in build/npm.
NODE_PATH=$(bash scripts/npm.sh | tail -n 1)
export NODE_PATH

# 3. The tessera CLI.
tessera=build/release/cli/tessera
if [ "$build" -eq 1 ]; then
  bash scripts/setup.sh   # the build's own packages (compiler, oneDNN, libonnx, ...)
  cmake --preset release >/dev/null
  cmake --build build/release --target tessera
fi
if [ "$build" -eq 0 ] && [[ " ${extra[*]-} " != *" --ort-only "* ]] && [ ! -x "$tessera" ]; then
  echo "bench: $tessera does not exist (drop --no-build)" >&2
  exit 2
fi

# 4. The zoo: models, inputs and PyTorch's outputs (skipped when present). Same threads and BLAS core
#    type as the timed runs. A model that fails to export is reported and the others still run.
export OPENBLAS_CORETYPE=SkylakeX OMP_NUM_THREADS="$threads"
zoo_args=(--out "$zoo" --threads "$threads" ${batch:+--batch "$batch"})
[ -z "$models" ] || zoo_args+=(--models "$models")
/usr/bin/python3 tests/zoo/make_zoo.py "${zoo_args[@]}" || echo "bench: some models did not export (above)" >&2

# 5. The comparison.
/usr/bin/python3 tests/bench/compare.py --tessera "$tessera" --models-dir "$zoo" \
  --models "$models" --threads "$threads" --runs "$runs" --rounds "$rounds" "${extra[@]}"
