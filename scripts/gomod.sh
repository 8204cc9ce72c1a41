#!/usr/bin/env bash
# gomod: point a Go module at the line's patched tree, for a kube-scheduler
# with out-of-tree plugins built against the fork (README, "Out-of-tree
# scheduler plugins").
#   scripts/gomod.sh        print the replace block for the module's go.mod
#   scripts/gomod.sh DIR    write DIR/go.work (DIR: the module's directory,
#                           relative to the current one or absolute) and
#                           print the command that builds the module
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

if [[ $# -gt 1 ]]; then
	die "usage: scripts/gomod.sh [DIR] (make gomod [GOMOD_DIR=<your module's directory>] [LINE=vA.B])"
fi
if [[ $# -eq 0 ]]; then
	carry gomod
	exit 0
fi
# carry runs in the repository root; DIR is relative to where we are.
dir=$1
[[ "$dir" == /* ]] || dir="$PWD/$dir"
carry gomod "$dir"
