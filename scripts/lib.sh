#!/usr/bin/env bash
# shellcheck disable=SC2034 # the paths are used by the scripts that source this file
# Sourced by the scripts: repository paths, the go environment of the
# patched tree, and the carry tool.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/_output"
TREE="$OUT/src/kubernetes"
BIN="$OUT/bin"
CARRY="$OUT/tools/carry"

# Every go command on the tree and its worktrees runs with the same flags so
# the build cache is shared between them (see DESIGN.md, build cache).
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0

log() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# carry runs the project's Go tool, built on first use (cached by go).
carry() {
	if [[ ! -x "$CARRY" || -n "$(find "$ROOT/cmd" "$ROOT/internal" "$ROOT/go.mod" "$ROOT/go.sum" -newer "$CARRY" -print -quit)" ]]; then
		(cd "$ROOT" && GOFLAGS="" go build -o "$CARRY" ./cmd/carry)
	fi
	(cd "$ROOT" && "$CARRY" "$@")
}
