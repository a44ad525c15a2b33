#!/usr/bin/env bash
# The GPU check: everything about the CUDA backend that needs a device, as one prepared run.
#
#   bash scripts/gpu_check.sh pack       here (no GPU needed): builds, then packs the CLI, the GPU
#                                        tests and the CUDA plugin with the shared libraries they
#                                        need (not CUDA's: the GPU machine has those) into .gpu/
#                                        (git-ignored), with a Fashion-MNIST split for training.
#   bash scripts/gpu_check.sh run OUT    on the GPU machine, from the repository root: unpacks .gpu/
#                                        and writes OUT/report.md and logs, in about 8 minutes:
#     1. the devices (nvidia-smi, tessera info --devices);
#     2. the CUDA kernel tests (tests/cuda: each kernel against the reference kernels, placement,
#        CUDA graphs, no allocation per run), then compute-sanitizer memcheck on them;
#     3. the NCCL test;
#     4. the zoo on the GPU against PyTorch's outputs (tests/zoo/check_zoo.py, exported there by
#        make_zoo.py with the machine's PyTorch): TF32 off at the zoo's tolerance, TF32 on at 1e-2;
#        and what each model leaves off the GPU, with the reasons;
#     5. inference against PyTorch eager on the GPU (scripts/gpu_peer.py): batch 1 and 64, ms and
#        achieved TFLOP/s beside the cuBLAS peak measured in the same run;
#     6. training against PyTorch eager on the GPU (tests/bench/train_bench.py --device cuda).
#
# With the device tool (see the README's GPU section): pack here, then
#   run(command="bash scripts/gpu_check.sh run $OUT", carry=[".gpu"], timeout_s=600)
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-pack}

pack() {
  set -e
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  [ -f build/release/build.ninja ] || bash scripts/build.sh release >/dev/null
  local targets="tessera cuda_kernels_test tessera_cuda_plugin"
  ninja -C build/release -t targets all | grep -q '^nccl_test:' && targets="$targets nccl_test"
  ninja -C build/release $targets >/dev/null
  rm -rf .gpu
  mkdir -p .gpu/stage/bin .gpu/stage/lib .gpu/fashion
  cp build/release/cli/tessera build/release/tests/cuda_kernels_test .gpu/stage/bin/
  [ -f build/release/tests/nccl_test ] && cp build/release/tests/nccl_test .gpu/stage/bin/
  cp build/release/lib/libtessera_cuda.so .gpu/stage/lib/
  # Every shared library they load, except the C library's and CUDA's own (the GPU machine's
  # PyTorch brings cuBLAS, cuDNN and NCCL; its driver brings libcuda).
  ldd .gpu/stage/bin/* .gpu/stage/lib/*.so | awk '/=>/ {print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libcublas[A-Za-z]*|libcudnn[a-z_]*|libnccl|libcudart)\.so' |
    while read -r lib; do cp -L "$lib" .gpu/stage/lib/; done
  strip --strip-unneeded .gpu/stage/bin/* .gpu/stage/lib/* 2>/dev/null || true
  tar -C .gpu/stage -cf - . | xz -T2 -6 > .gpu/pack.tar.xz
  rm -rf .gpu/stage
  # Training data: Fashion-MNIST's test split, named as a training split (10,000 images, 4.4 MB).
  local f=/usr/share/datasets/fashion-mnist
  if [ -f $f/t10k-images-idx3-ubyte.gz ]; then
    cp $f/t10k-images-idx3-ubyte.gz .gpu/fashion/train-images-idx3-ubyte.gz
    cp $f/t10k-labels-idx1-ubyte.gz .gpu/fashion/train-labels-idx1-ubyte.gz
  fi
  local tree
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  echo "gpu_check: packed .gpu ($(du -sh .gpu | cut -f1)); with the tree ($((tree / 1048576)) MiB) it must stay under 64 MiB"
  echo "gpu_check: now run on the GPU machine: bash scripts/gpu_check.sh run \$OUT   (carry: .gpu)"
}

run() {
  local out=${1:?usage: gpu_check.sh run OUT}
  mkdir -p "$out"
  local report=$out/report.md start=$SECONDS
  local pack_dir=/tmp/tessera-gpu
  rm -rf $pack_dir && mkdir -p $pack_dir && xz -dc .gpu/pack.tar.xz | tar -C $pack_dir -xf -
  local tessera=$pack_dir/bin/tessera
  # CUDA's libraries: the toolkit's, and the ones PyTorch's wheels bring.
  local nv
  nv=$(python3 -c "import site, glob, os; print(':'.join(sorted({os.path.dirname(p) for s in site.getsitepackages() for p in glob.glob(s + '/nvidia/**/lib*.so*', recursive=True)})))" 2>/dev/null)
  export LD_LIBRARY_PATH=$pack_dir/lib:${nv}:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:/usr/local/nvidia/lib:${LD_LIBRARY_PATH:-}
  export TESSERA_DB=$out/insight.db PYTHONUNBUFFERED=1
  section() { printf '\n## %s (at %d s)\n\n```\n' "$1" $((SECONDS - start)) >>"$report"; }
  endsection() { printf '```\n' >>"$report"; }
  {
    echo "# Tessera GPU check"
    echo
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC')"
  } >"$report"

  section "1. devices"
  { echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldd $pack_dir/lib/libtessera_cuda.so | grep -E 'not found|cublas|cudnn';
    nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    lscpu | grep 'Model name'; $tessera info --devices; } >>"$report" 2>&1
  endsection

  section "2. CUDA kernel tests, then compute-sanitizer memcheck"
  timeout 150 $pack_dir/bin/cuda_kernels_test >"$out/kernels.log" 2>&1
  echo "cuda_kernels_test exit $?" >>"$report"
  grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|Failure|error' "$out/kernels.log" | head -40 >>"$report"
  if command -v compute-sanitizer >/dev/null; then
    timeout 200 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $pack_dir/bin/cuda_kernels_test \
      --gtest_filter='Cuda.Matmul*:Cuda.Conv*:Cuda.Row*:Cuda.Data*:Cuda.ASmall*:Cuda.Nodes*' >"$out/sanitizer.log" 2>&1
    echo "compute-sanitizer memcheck exit $? (9: errors found)" >>"$report"
    grep -E 'ERROR SUMMARY|Invalid|out of bounds|leak' "$out/sanitizer.log" | head -20 >>"$report"
  else
    echo "compute-sanitizer not found" >>"$report"
  fi
  endsection

  section "3. NCCL"
  if [ -x $pack_dir/bin/nccl_test ]; then timeout 60 $pack_dir/bin/nccl_test >>"$report" 2>&1; echo "exit $?" >>"$report"; fi
  endsection

  local zoo=/tmp/tessera-zoo models="${GPU_CHECK_MODELS:-lenet,mlp,resnet18,resnet50,mobilenetv2,efficientnet_b0,densenet121,vit_b_16,convnext_tiny,bert,gpt,transformer,unet,squeezenet,googlenet,lstm}"
  section "4. the zoo on the GPU against PyTorch (TF32 off, then on)"
  timeout 240 python3 tests/zoo/check_zoo.py --tessera $tessera --zoo $zoo --python python3 --models $models \
    --threads 8 --timeout 120 --run-args "--device cuda --precision fp32" >"$out/zoo.log" 2>&1
  echo "TF32 off: exit $?" >>"$report"
  grep -E '^(ok|FAIL|xfail)|check_zoo' "$out/zoo.log" >>"$report"
  timeout 120 python3 tests/zoo/check_zoo.py --tessera $tessera --zoo $zoo --models $models --no-export \
    --threads 8 --timeout 60 --tolerance 1e-2 --run-args "--device cuda" >"$out/zoo_tf32.log" 2>&1
  echo "TF32 on (1e-2): exit $?" >>"$report"
  grep -E '^(ok|FAIL|xfail)|check_zoo' "$out/zoo_tf32.log" >>"$report"
  echo "steps off the GPU:" >>"$report"
  python3 - "$tessera" "$zoo" "$models" >>"$report" 2>&1 <<'EOF'
import json, subprocess, sys
sys.path.insert(0, "tests/zoo")
from zoo_models import load_zoo
tessera, zoo, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
for name, m in load_zoo(zoo, [n for n in names]).items():
    p = subprocess.run([tessera, "bench", m.onnx, *m.feed_args(), "--device", "cuda", "--runs", "1", "--warmup", "0",
                        "--json", "--no-record"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(f"{name}: bench failed: {p.stderr.strip()[:200]}")
        continue
    j = json.loads(p.stdout)
    print(f"{name}: {j['steps_off_device']} of {j['steps']} steps off the GPU; arenas {j['arena_bytes']}")
    for why, n in sorted(j["off_device"].items(), key=lambda kv: -kv[1])[:6]:
        print(f"    {n:4d} x {why[:150]}")
EOF
  endsection

  section "5. inference against PyTorch eager on the GPU (TF32 on both sides)"
  local peer=/tmp/tessera-peer
  timeout 200 python3 scripts/gpu_peer.py --out $peer --models resnet50,vit_b_16,bert,mobilenetv2 --batches 1,64 \
    >"$out/peer.jsonl" 2>"$out/peer.err"
  echo "gpu_peer exit $?" >>"$report"
  timeout 150 python3 - "$tessera" "$out/peer.jsonl" >>"$report" 2>&1 <<'EOF'
import json, subprocess, sys
tessera, rows = sys.argv[1], [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
peak = rows[0] if rows and "gpu" in rows[0] else {}
print(f"GPU {peak.get('gpu', '?')}, PyTorch {peak.get('torch', '?')}; cuBLAS 8192^3 peak: TF32 "
      f"{peak.get('peak_tf32_tflops', 0):.0f}, fp32 {peak.get('peak_fp32_tflops', 0):.0f}, bf16 {peak.get('peak_bf16_tflops', 0):.0f} TFLOP/s")
print(f"{'model':14} {'batch':>5} {'tessera ms':>11} {'torch ms':>9} {'ratio':>6} {'TFLOP/s':>8}  off-GPU steps")
for r in rows:
    if "model" not in r:
        continue
    if "error" in r:
        print(f"{r['model']:14} {r['batch']:5}  PyTorch side failed: {r['error'][:120]}")
        continue
    feeds = sum((["--input", f"{k}={v}"] for k, v in r["inputs"].items()), [])
    p = subprocess.run([tessera, "bench", r["onnx"], *feeds, "--device", "cuda", "--runs", "50", "--warmup", "5",
                        "--json", "--no-record"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(f"{r['model']:14} {r['batch']:5}  tessera failed: {p.stderr.strip()[:150]}")
        continue
    j = json.loads(p.stdout)
    print(f"{r['model']:14} {r['batch']:5} {j['median_ms']:11.3f} {r['torch_eager_ms']:9.3f} "
          f"{j['median_ms'] / r['torch_eager_ms']:6.2f} {j['gflops'] / 1000:8.1f}  {j['steps_off_device']}")
EOF
  tail -5 "$out/peer.err" >>"$report"
  endsection

  section "6. training against PyTorch eager on the GPU (20 steps)"
  for m in charlm resnet18 lenet; do
    FASHION_MNIST_DIR=$PWD/.gpu/fashion timeout 60 python3 tests/bench/train_bench.py --tessera $tessera --device cuda \
      --models $m --steps 20 --threads 8 >>"$out/train.log" 2>&1
    echo "train_bench $m exit $?" >>"$report"
  done
  grep -vE '^\s*$' "$out/train.log" | tail -30 >>"$report"
  endsection
  echo "gpu_check: done in $((SECONDS - start)) s; report in $report"
}

case "$mode" in
  pack) pack ;;
  run) run "${2:-}" ;;
  *) echo "usage: gpu_check.sh pack | run OUT" >&2; exit 2 ;;
esac
