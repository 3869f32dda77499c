#!/usr/bin/env bash
# Follow a server-sent event stream and print each event's data, one per line.
#
#   examples/shell/watch-stream.sh [--once] URL [EVENT-TYPE]
#
# rastrillo-stream prints JSON Lines (rastrillo-stream(1), "Output"): "event" lines carry the
# data; "open", "offline", "online" and "reconnect" lines tell what the connection does, and
# go to stderr here so a person sees them while stdout stays data only. It reconnects by
# itself, so this pipeline runs until interrupted; with --once it ends with the first stream.
# EVENT-TYPE keeps only the events of that type.
set -euo pipefail

once=()
if [[ ${1:-} == --once ]]; then
    once=(--once)
    shift
fi
url=${1:?usage: watch-stream.sh [--once] URL [EVENT-TYPE]}
type=${2:-}

rastrillo-stream "${once[@]}" "$url" |
    while IFS= read -r line; do
        case $(jq -r .type <<<"$line") in
            event)
                jq -r --arg type "$type" 'select($type == "" or .event == $type) | .data' <<<"$line" ;;
            *)
                printf 'watch-stream: %s\n' "$line" >&2 ;;
        esac
    done
