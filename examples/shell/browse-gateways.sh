#!/usr/bin/env bash
# List the Rivet gateways avahi-daemon sees, one "name host:port fingerprint" line each.
#
#   examples/shell/browse-gateways.sh            # one pass over what is visible now
#
# rivet-browse prints one JSON object per line (see rivet-browse(1), "Output"); jq keeps the
# "resolved" ones and picks the fields a person needs to run `rivet-pair companion HOST:PORT`.
set -euo pipefail

rivet-browse --once |
    jq -r 'select(.event == "resolved")
           | "\(.name)\t\(.host):\(.port)\t\(.txt.fp // "-")"'
