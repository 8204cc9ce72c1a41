#!/usr/bin/env bash
# fetch: assemble the line's pinned upstream from the Go module proxy into
# _output/<line>/src/kubernetes, atomically: the tree appears only when
# complete.
# UPSTREAM_SOURCE=git clones the upstream git repository instead
# (UPSTREAM_GIT_URL), and checks every module directory against the pin.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

want=$(carry upstream)
if [[ "$(carry tree-status)" == current ]]; then
	log "fetch: line $LINE: $TREE is upstream $want (up to date)"
	exit 0
fi

# One fixed staging folder: a fetch that was killed (no EXIT trap runs on
# SIGKILL) leaves it, and the next fetch starts by removing it.
tmp="$(dirname "$TREE")/.kubernetes.fetch"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT

case "${UPSTREAM_SOURCE:-proxy}" in
proxy)
	log "fetch: line $LINE: assembling upstream $want from the Go module proxy"
	carry assemble "$tmp"
	;;
git)
	url=${UPSTREAM_GIT_URL:-https://github.com/kubernetes/kubernetes}
	log "fetch: line $LINE: cloning upstream $want from $url"
	git clone --quiet --depth 1 --branch "$want" "$url" "$tmp/clone"
	rm -rf "$tmp/clone/.git"
	shopt -s dotglob
	mv "$tmp/clone"/* "$tmp"/
	rmdir "$tmp/clone"
	# What git served is checked like the module zips: each module's
	# directory must hash to the pin.
	carry verify-tree "$tmp"
	;;
*)
	die "UPSTREAM_SOURCE=${UPSTREAM_SOURCE} is not one of: proxy, git"
	;;
esac

carry init-tree "$tmp"
mv -T "$tmp" "$TREE"
trap - EXIT
log "fetch: line $LINE: $TREE is upstream $want"
