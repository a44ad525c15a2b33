#!/usr/bin/env bash
# Screenshots of tessera-studio as a person sees it: the app runs on a virtual X server (Xvfb),
# opens FILE, grabs its window to a PNG (tessera-studio --screenshot) and exits. Used by the
# READMEs and by later issues' visual checks.
#
#   studio/screenshot.sh samples/lenet.json /tmp/lenet.png
#   studio/screenshot.sh --binary build/h-studio/studio/tessera-studio samples/mlp.json mlp.png
#   studio/screenshot.sh --offscreen samples/lenet.json lenet.png   # no X server (Qt offscreen)
#   studio/screenshot.sh --size 1280x720 --tab runs --db /tmp/runs.db "" runs.png  # no FILE
#
# Options: --binary PATH (default build/release/studio/tessera-studio), --screen WxH (default
# 1280x800, or the window's size plus 80 pixels), --offscreen; --size WxH (the window, default
# 1200x760), --tab graph|runs|passes|profile and --db PATH are passed to tessera-studio. Exit status: tessera-studio's (1 when
# FILE cannot be opened; the error is on stderr).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary="$root/build/release/studio/tessera-studio"
screen=1280x800
offscreen=0
extra=()
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --screen) screen=$2; shift 2 ;;
    --offscreen) offscreen=1; shift ;;
    --size) extra+=(--size "$2"); w=${2%x*}; h=${2#*x}; screen=$((w + 80))x$((h + 80)); shift 2 ;;
    --tab|--db) extra+=("$1" "$2"); shift 2 ;;
    -h|--help) usage ;;
    -*) echo "screenshot.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || usage
file=$1
out=$2
files=()
[ -n "$file" ] && files=("$file")
if [ ! -x "$binary" ]; then
  echo "screenshot.sh: $binary not found; build it (cmake --build build/release --target tessera-studio) or pass --binary" >&2
  exit 2
fi
if [ "$offscreen" -eq 0 ] && ! command -v xvfb-run >/dev/null; then
  echo "screenshot.sh: xvfb-run not found (Debian: xvfb xauth); using Qt's offscreen platform" >&2
  offscreen=1
fi
if [ "$offscreen" -eq 1 ]; then
  QT_QPA_PLATFORM=offscreen "$binary" "${files[@]}" "${extra[@]}" --screenshot "$out"
else
  QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 ${screen}x24" "$binary" "${files[@]}" "${extra[@]}" --screenshot "$out"
fi
echo "screenshot.sh: wrote $out"
