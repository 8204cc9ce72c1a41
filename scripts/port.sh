#!/usr/bin/env bash
# port: carry patches of one line into another with 3-way merges; the
# target line's series is replayed with them in place, and the result is
# exported into the target line. Stops on a conflict with the tree ready
# to resolve. With SINCE (a commit of this repository), only the change
# made to each patch in FROM since that commit is merged into TO's own
# version of the patch.
#   scripts/port.sh start FROM TO PATCH...
#   scripts/port.sh continue TO
#   scripts/port.sh abort TO
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

case "${1:-}" in
start)
	[[ $# -ge 4 ]] || die "usage: scripts/port.sh start FROM TO PATCH..."
	from=$2 to=$3
	shift 3
	since=()
	[[ -z "${SINCE:-}" ]] || since=(-since "$SINCE")
	carry --line "$to" port -from "$from" "${since[@]}" "$@"
	;;
continue)
	[[ $# -eq 2 ]] || die "usage: scripts/port.sh continue TO"
	carry --line "$2" port-continue
	;;
abort)
	[[ $# -eq 2 ]] || die "usage: scripts/port.sh abort TO"
	carry --line "$2" port-abort
	;;
*)
	die "usage: scripts/port.sh start FROM TO PATCH... | continue TO | abort TO"
	;;
esac
