#!/usr/bin/env bash
# rebase: move a line's series to another upstream release (of another
# minor: start that line from this one).
#   scripts/rebase.sh start vA.B.C   pin vA.B.C, replay the series on a fresh tree
#   scripts/rebase.sh continue       go on after resolving a conflict
#   scripts/rebase.sh abort          throw the rebase away (nothing else changes)
# A finished rebase updates UPSTREAM, the series and patches, DROPPED,
# REVISION and drafts a CHANGELOG.md section.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

case "${1:-}" in
start)
	[[ $# -eq 2 ]] || die "usage: scripts/rebase.sh start vA.B.C"
	carry rebase "$2"
	;;
continue)
	carry rebase-continue
	;;
abort)
	carry rebase-abort
	;;
*)
	die "usage: scripts/rebase.sh start vA.B.C | continue | abort"
	;;
esac
