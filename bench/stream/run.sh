#!/bin/sh
# Benchmark of rastrillo-stream on loopback (see README in this directory): one local server
# sends EVENTS events of 100 bytes; rastrillo-stream writes JSON Lines to /dev/null (without and
# with --resume-file) and curl -sN writes the raw stream to /dev/null, RUNS alternating runs each
# (medians printed), and
# sseclient-py (from PyPI, installed into a temporary venv) parses the same stream once. Prints
# events/s and ratios, then peak RSS of rastrillo-stream on a 1 GB stream (10,000,000 events).
# Usage: bench/stream/run.sh [EVENTS]   (default 1000000; RUNS=5). Builds rastrillo-stream in
# release with the static Swift runtime first, as bench/fetch does (TOOL=path measures another
# build instead).
set -eu
EVENTS=${1:-1000000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${TOOL:-}" ]; then
    echo "building rastrillo-stream (release, static Swift runtime)..." >&2
    (cd "$ROOT" && swift build -c release $(make -s -C "$ROOT" print-static-flags) --product rastrillo-stream >&2)
    TOOL=$ROOT/.build/release/rastrillo-stream
fi
WORK=$(mktemp -d)
trap 'kill $SERVER $BIGSERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT INT TERM
python3 "$ROOT/bench/stream/server.py" "$WORK/port" "$EVENTS" distinct & SERVER=$!
python3 "$ROOT/bench/stream/server.py" "$WORK/bigport" 10000000 & BIGSERVER=$!
while [ ! -s "$WORK/port" ] || [ ! -s "$WORK/bigport" ]; do sleep 0.05; done
URL="http://127.0.0.1:$(cat "$WORK/port")/events"
BIGURL="http://127.0.0.1:$(cat "$WORK/bigport")/events"
python3 -m venv "$WORK/venv" >/dev/null
"$WORK/venv/bin/pip" install -q sseclient-py >/dev/null

seconds() { # command...: wall seconds of the command
    start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc -l
}
# RUNS alternating runs of the tool and curl (default 5); each figure below is the median.
RUNS=${RUNS:-5}
: > "$WORK/t_tool"
: > "$WORK/t_resume"
: > "$WORK/t_curl"
run=0
while [ "$run" -lt "$RUNS" ]; do
    seconds sh -c "'$TOOL' --once '$URL' > /dev/null" >> "$WORK/t_tool"
    # A fresh resume file each run, so every run starts from no ID and writes as it goes.
    rm -f "$WORK/place"
    seconds sh -c "'$TOOL' --once --resume-file '$WORK/place' '$URL' > /dev/null" >> "$WORK/t_resume"
    seconds sh -c "curl -sN '$URL' > /dev/null" >> "$WORK/t_curl"
    run=$((run + 1))
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
t_tool=$(median "$WORK/t_tool")
t_resume=$(median "$WORK/t_resume")
t_curl=$(median "$WORK/t_curl")
t_py=$(seconds sh -c "'$WORK/venv/bin/python' '$ROOT/bench/stream/parse.py' '$URL' > '$WORK/pycount'")
[ "$(cat "$WORK/pycount")" = "$EVENTS" ] || { echo "sseclient-py saw $(cat "$WORK/pycount") events" >&2; exit 1; }
lines=$("$TOOL" --once "$URL" | wc -l)
[ "$lines" = $((EVENTS + 1)) ] || { echo "rastrillo-stream printed $lines lines" >&2; exit 1; }
[ "$(cat "$WORK/place")" = "$(printf '%08d' "$EVENTS")" ] || { echo "the resume file holds $(cat "$WORK/place")" >&2; exit 1; }
rate() { echo "$EVENTS / $1" | bc -l | xargs printf '%.0f'; }
printf 'events: %d of 100 bytes; rastrillo-stream and curl: median of %d alternating runs\n' "$EVENTS" "$RUNS"
printf 'rastrillo-stream (JSON Lines): %10s events/s  (%.3f s)\n' "$(rate "$t_tool")" "$t_tool"
printf '  with --resume-file:          %10s events/s  (%.3f s)\n' "$(rate "$t_resume")" "$t_resume"
printf 'curl -sN (raw bytes):          %10s events/s  (%.3f s)\n' "$(rate "$t_curl")" "$t_curl"
printf 'sseclient-py:                  %10s events/s  (%.3f s)\n' "$(rate "$t_py")" "$t_py"
printf 'ratio to curl:   %.2fx  (target >= 1.0)\n' "$(echo "$t_curl / $t_tool" | bc -l)"
printf 'ratio to python: %.2fx  (target >= 10)\n' "$(echo "$t_py / $t_tool" | bc -l)"
rss=$( { /usr/bin/time -f '%M' "$TOOL" --once "$BIGURL" > /dev/null; } 2>&1 | tail -n 1)
printf 'peak RSS on a 1 GB stream: %d KiB (target <= 32768)\n' "$rss"
