#!/usr/bin/env bash
# bump: move a line to the newest patch release of its minor that the
# module proxy serves whole, replaying its series (same report as rebase;
# stops on a conflict: `make rebase-continue` / `make rebase-abort`).
#   scripts/bump.sh             start (LINE= names the line)
#   scripts/bump.sh continue    go on after resolving a conflict
#   scripts/bump.sh abort       throw the bump away
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

case "${1:-start}" in
start) carry bump ;;
continue) carry bump-continue ;;
abort) carry bump-abort ;;
*) die "usage: scripts/bump.sh [start|continue|abort]" ;;
esac
