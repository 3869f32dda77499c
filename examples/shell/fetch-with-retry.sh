#!/usr/bin/env bash
# Fetch a URL, retrying only when the failure's class says a retry can help.
#
#   examples/shell/fetch-with-retry.sh URL [MAX-ATTEMPTS]    (default 5 attempts)
#
# rastrillo-fetch exits with a code per retry class (rastrillo-fetch(1), "EXIT STATUS"):
#   3 offline    wait for the network, then retry
#   4 transient  back off (doubling, 1 s up to 30 s) and retry
#   5 auth       stop: the credential must be renewed (sign in again), retrying cannot help
#   6 permanent  stop: the same request will fail the same way
#   7 conflict   refetch the current state (here: report it; the caller reconciles)
# With -f (--fail) rastrillo-fetch writes only a 2xx response's body to stdout, so the output of
# `fetch-with-retry.sh URL | jq .` is the successful body alone; diagnostics go to stderr. After
# the last attempt it exits with that attempt's status.
# Environment: RETRY_WAIT_SCALE multiplies every wait (0 in tests, to run without sleeping).
set -euo pipefail

url=${1:?usage: fetch-with-retry.sh URL [MAX-ATTEMPTS]}
max_attempts=${2:-5}
scale=${RETRY_WAIT_SCALE:-1}
delay=1

pause() { sleep "$(( $1 * scale ))"; }

for (( attempt = 1; attempt <= max_attempts; attempt++ )); do
    status=0
    rastrillo-fetch -f "$url" || status=$?
    case $status in
        0)
            exit 0 ;;
        3)
            echo "fetch-with-retry: offline (attempt $attempt); waiting for the network" >&2
            pause 5 ;;
        4)
            echo "fetch-with-retry: transient failure (attempt $attempt); backing off ${delay}s" >&2
            pause "$delay"
            delay=$(( delay * 2 > 30 ? 30 : delay * 2 )) ;;
        5)
            echo "fetch-with-retry: the credential was refused; sign in again, then rerun" >&2
            exit 5 ;;
        6)
            echo "fetch-with-retry: permanent failure; not retrying" >&2
            exit 6 ;;
        7)
            echo "fetch-with-retry: conflict; refetch the current state and reconcile" >&2
            exit 7 ;;
        *)
            echo "fetch-with-retry: rastrillo-fetch failed with status $status" >&2
            exit "$status" ;;
    esac
done
echo "fetch-with-retry: gave up after $max_attempts attempts" >&2
exit "$status"
