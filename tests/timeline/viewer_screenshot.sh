#!/bin/sh
# Screenshots of tessera-insight under Xvfb (ctest insight.viewer_screenshot_*; exit 77 without
# xvfb-run). Records a `tessera bench` of a graph, then either shows the run (mode "run") or a
# Chrome export of it cut at two thirds (mode "truncated", which must warn "cut short at byte"),
# and checks that an unreadable file exits 1 with --screenshot.
#   viewer_screenshot.sh run|truncated TESSERA_INSIGHT TESSERA GRAPH.json WORKDIR
set -u
mode=$1 viewer=$2 tessera=$3 graph=$4 work=$5
command -v xvfb-run >/dev/null 2>&1 || { echo "xvfb-run is missing: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
db=$work/insight.db
"$tessera" bench "$graph" --db "$db" > "$work/bench.log" 2>&1 || { cat "$work/bench.log"; exit 1; }
shot() {
  xvfb-run -a -s "-screen 0 1280x800x24" "$viewer" "$@" > "$work/out.log" 2>&1
  rc=$?
  cat "$work/out.log"
  return $rc
}
check_png() {
  [ -s "$1" ] || { echo "no screenshot $1"; exit 1; }
  [ "$(wc -c < "$1")" -gt 20000 ] || { echo "screenshot $1 looks empty"; exit 1; }
  echo "screenshot: $1"
}
case $mode in
  run)
    shot --db "$db" --run last --frames 3 --screenshot "$work/run.png" || exit 1
    check_png "$work/run.png"
    ;;
  truncated)
    "$tessera" runs export-trace last --chrome "$work/trace.json" --db "$db" || exit 1
    size=$(wc -c < "$work/trace.json")
    head -c $((size * 2 / 3)) "$work/trace.json" > "$work/cut.json"
    shot "$work/cut.json" --frames 3 --screenshot "$work/truncated.png" || exit 1
    grep -q "cut short at byte" "$work/out.log" || { echo "no cut-short warning"; exit 1; }
    check_png "$work/truncated.png"
    shot "$work/missing.json" --screenshot "$work/missing.png"
    [ $? -eq 1 ] || { echo "an unreadable file must exit 1"; exit 1; }
    grep -q "cannot open the trace file" "$work/out.log" || exit 1
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
