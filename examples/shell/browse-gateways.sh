#!/usr/bin/env bash
# List the Rivet gateways avahi-daemon sees, one "name<TAB>address:port<TAB>host" line each.
#
#   examples/shell/browse-gateways.sh            # one pass over what is visible now
#
# rivet-browse prints one JSON object per line (see rivet-browse(1), "Output"); jq keeps the
# "added" and "changed" ones and picks what a person needs to run
# `rivet-pair --connect ADDRESS:PORT` (IPv6 addresses are bracketed).
set -euo pipefail

rivet-browse --once |
    jq -r 'select(.event == "added" or .event == "changed")
           | (.addresses[0] // .host) as $address
           | (if ($address | contains(":")) then "[\($address)]" else $address end) as $address
           | "\(.name)\t\($address):\(.port)\t\(.host)"'
