#!/usr/bin/env bash
# clean: remove the line's patched tree (`tree`) or everything made for the
# line, _output/<line> (`all`), but never a tree that holds work in no patch
# file.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

what=${1:-all}
carry removable
case "$what" in
tree)
	log "clean: removing $TREE"
	rm -rf "$TREE"
	;;
all)
	log "clean: removing $OUT"
	rm -rf "$OUT"
	;;
*)
	die "usage: scripts/clean.sh tree|all"
	;;
esac
