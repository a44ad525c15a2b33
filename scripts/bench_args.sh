# Sourced by the benchmark wrappers (train_bench.sh, dp_bench.sh, quant_bench.sh): bench_args "$@"
# sets build=0 on --no-build, prints the calling script's header comment on -h/--help, and collects
# every other argument in the array args for the Python side.
bench_args() {
  build=1
  args=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) args+=("$a") ;;
    esac
  done
}
