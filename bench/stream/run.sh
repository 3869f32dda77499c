#!/bin/sh
# Benchmark of rastrillo-stream on loopback (see README in this directory), on two shapes of
# stream from local servers: the first shape (EVENTS events of 100 bytes, one data line, no
# event name) and a realistic mix (EVENTS / 5 events: event names, comments, IDs, JSON data of
# 40-2000 bytes, one in five on two data lines). On each, rastrillo-stream writes JSON Lines to
# /dev/null (on the first shape also with --resume-file) and curl -sN writes the raw stream to
# /dev/null, RUNS alternating runs each (medians printed): wall time and CPU time (user + system,
# from wait4) of each process. sseclient-py (from PyPI, installed into a temporary venv) parses
# the first shape once. Then latency at 100 events/s (LATENCY_EVENTS events, default 1000, per
# shape and consumer): from the server's write of an event to its arrival on the reading end of
# our stdout (curl -sN: of its raw bytes), p50 and p99. Last, peak RSS of rastrillo-stream on a
# 1 GB stream (10,000,000 events).
# Usage: bench/stream/run.sh [EVENTS]   (default 1000000; RUNS=5). Builds rastrillo-stream in
# release with the static Swift runtime first, as bench/fetch does (TOOL=path measures another
# build instead). Needs python3 with venv, curl, bc and cc.
set -eu
EVENTS=${1:-1000000}
MIX_EVENTS=$((EVENTS / 5))
LATENCY_EVENTS=${LATENCY_EVENTS:-1000}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ -z "${TOOL:-}" ]; then
    echo "building rastrillo-stream (release, static Swift runtime)..." >&2
    (cd "$ROOT" && swift build -c release $(make -s -C "$ROOT" print-static-flags) --product rastrillo-stream >&2)
    TOOL=$ROOT/.build/release/rastrillo-stream
fi
WORK=$(mktemp -d)
SERVERS=""
trap 'kill $SERVERS 2>/dev/null || true; rm -rf "$WORK"' EXIT INT TERM
serve() { # NAME ARGUMENTS...: a server.py whose URL is then in $WORK/NAME.url
    name=$1; shift
    python3 "$HERE/server.py" "$WORK/$name.port" "$@" & SERVERS="$SERVERS $!"
}
serve plain "$EVENTS" distinct
serve mix "$MIX_EVENTS" mix
serve big 10000000
serve paced-plain "$LATENCY_EVENTS" paced-plain 100
serve paced-mix "$LATENCY_EVENTS" paced-mix 100
for name in plain mix big paced-plain paced-mix; do
    while [ ! -s "$WORK/$name.port" ]; do sleep 0.05; done
    echo "http://127.0.0.1:$(cat "$WORK/$name.port")/events" > "$WORK/$name.url"
done
URL=$(cat "$WORK/plain.url")
cc -O2 -o "$WORK/latency-reader" "$HERE/latency-reader.c"
python3 -m venv "$WORK/venv" >/dev/null
"$WORK/venv/bin/pip" install -q sseclient-py >/dev/null

timed() { # FILE COMMAND...: appends the command's `wall cpu` (seconds) to FILE
    file=$1; shift
    python3 "$HERE/timed.py" "$@" >> "$file"
}
median() { # FILE COLUMN
    awk -v c="$2" '{ print $c }' "$1" | sort -n |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# RUNS alternating runs of the tool and curl on each shape (default 5); each figure below is
# the median.
RUNS=${RUNS:-5}
for shape in plain mix; do
    : > "$WORK/$shape.tool"; : > "$WORK/$shape.resume"; : > "$WORK/$shape.curl"
done
run=0
while [ "$run" -lt "$RUNS" ]; do
    timed "$WORK/plain.tool" "$TOOL" --once "$URL"
    # A fresh resume file each run, so every run starts from no ID and writes as it goes.
    rm -f "$WORK/place"
    timed "$WORK/plain.resume" "$TOOL" --once --resume-file "$WORK/place" "$URL"
    timed "$WORK/plain.curl" curl -sN "$URL"
    timed "$WORK/mix.tool" "$TOOL" --once "$(cat "$WORK/mix.url")"
    timed "$WORK/mix.curl" curl -sN "$(cat "$WORK/mix.url")"
    run=$((run + 1))
done
t_tool=$(median "$WORK/plain.tool" 1)
t_resume=$(median "$WORK/plain.resume" 1)
t_curl=$(median "$WORK/plain.curl" 1)
start=$(date +%s.%N)
"$WORK/venv/bin/python" "$ROOT/bench/stream/parse.py" "$URL" > "$WORK/pycount"
t_py=$(echo "$(date +%s.%N) - $start" | bc -l)
[ "$(cat "$WORK/pycount")" = "$EVENTS" ] || { echo "sseclient-py saw $(cat "$WORK/pycount") events" >&2; exit 1; }
lines=$("$TOOL" --once "$URL" | wc -l)
[ "$lines" = $((EVENTS + 1)) ] || { echo "rastrillo-stream printed $lines lines" >&2; exit 1; }
lines=$("$TOOL" --once "$(cat "$WORK/mix.url")" | wc -l)
[ "$lines" = $((MIX_EVENTS + 1)) ] || { echo "rastrillo-stream printed $lines lines of the mix" >&2; exit 1; }
[ "$(cat "$WORK/place")" = "$(printf '%08d' "$EVENTS")" ] || { echo "the resume file holds $(cat "$WORK/place")" >&2; exit 1; }
rate() { echo "$EVENTS / $1" | bc -l | xargs printf '%.0f'; }
printf 'events: %d of 100 bytes; rastrillo-stream and curl: median of %d alternating runs\n' "$EVENTS" "$RUNS"
printf 'rastrillo-stream (JSON Lines): %10s events/s  (%.3f s)\n' "$(rate "$t_tool")" "$t_tool"
printf '  with --resume-file:          %10s events/s  (%.3f s)\n' "$(rate "$t_resume")" "$t_resume"
printf 'curl -sN (raw bytes):          %10s events/s  (%.3f s)\n' "$(rate "$t_curl")" "$t_curl"
printf 'sseclient-py:                  %10s events/s  (%.3f s)\n' "$(rate "$t_py")" "$t_py"
printf 'ratio to curl:   %.2fx  (target >= 0.6)\n' "$(echo "$t_curl / $t_tool" | bc -l)"
printf 'ratio to python: %.2fx  (target >= 10)\n' "$(echo "$t_py / $t_tool" | bc -l)"

# CPU per event: the medians of each process's user + system time over the same stream.
cpu_line() { # SHAPE COUNT LABEL
    tool=$(median "$WORK/$1.tool" 2); curl=$(median "$WORK/$1.curl" 2)
    awk -v t="$tool" -v c="$curl" -v n="$2" -v s="$3" 'BEGIN {
        printf "%s: CPU per event: rastrillo-stream %.0f ns, curl -sN %.0f ns (median CPU per run %.3f and %.3f s)\n", s, t / n * 1e9, c / n * 1e9, t, c
        printf "%s: CPU ratio (rastrillo-stream / curl): %.2fx  (target <= 2.5)\n", s, t / c }'
}
wall_line() { # SHAPE COUNT LABEL
    tool=$(median "$WORK/$1.tool" 1); curl=$(median "$WORK/$1.curl" 1)
    awk -v t="$tool" -v c="$curl" -v n="$2" -v s="$3" 'BEGIN {
        printf "%s: wall: rastrillo-stream %.0f events/s (%.3f s), curl -sN %.0f events/s (%.3f s)\n", s, n / t, t, n / c, c
        printf "%s: wall ratio to curl: %.2fx  (target >= 0.6)\n", s, c / t }'
}
mix_bytes=$(curl -sN "$(cat "$WORK/mix.url")" | wc -c)
printf 'mix: %d events, %d bytes (%.0f bytes per event)\n' "$MIX_EVENTS" "$mix_bytes" "$(echo "$mix_bytes / $MIX_EVENTS" | bc -l)"
cpu_line plain "$EVENTS" plain
wall_line mix "$MIX_EVENTS" mix
cpu_line mix "$MIX_EVENTS" mix

# Latency at 100 events/s: each consumer's stdout is a pipe to latency-reader.
latency() { # SHAPE CONSUMER COMMAND...: writes `p50_us p99_us` to $WORK/SHAPE.CONSUMER.pct
    shape=$1; consumer=$2; shift 2
    "$@" | "$WORK/latency-reader" > "$WORK/$shape.$consumer.latency"
    got=$(wc -l < "$WORK/$shape.$consumer.latency")
    [ "$got" = "$LATENCY_EVENTS" ] || { echo "$consumer saw $got of $LATENCY_EVENTS stamped events ($shape)" >&2; exit 1; }
    sort -n "$WORK/$shape.$consumer.latency" |
        awk '{ v[NR] = $1 } END { printf "%.0f %.0f\n", v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.99)] / 1000 }' \
        > "$WORK/$shape.$consumer.pct"
}
for shape in plain mix; do
    url=$(cat "$WORK/paced-$shape.url")
    latency "$shape" tool "$TOOL" --once "$url"
    latency "$shape" curl curl -sN "$url"
    set -- $(cat "$WORK/$shape.tool.pct" "$WORK/$shape.curl.pct")
    printf '%s: latency at 100 events/s (%d events): rastrillo-stream p50 %d us, p99 %d us; curl -sN p50 %d us, p99 %d us\n' \
        "$shape" "$LATENCY_EVENTS" "$1" "$2" "$3" "$4"
    printf '%s: latency p99 over curl'"'"'s: %d us  (target <= 200)\n' "$shape" $(($2 - $4))
done

rss=$( { /usr/bin/time -f '%M' "$TOOL" --once "$(cat "$WORK/big.url")" > /dev/null; } 2>&1 | tail -n 1)
printf 'peak RSS on a 1 GB stream: %d KiB (target <= 32768)\n' "$rss"
