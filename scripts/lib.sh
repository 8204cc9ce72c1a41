#!/usr/bin/env bash
# shellcheck disable=SC2034 # the paths are used by the scripts that source this file
# Sourced by the scripts: the repository root, the carry tool, the go
# environment of the patched trees and the programs to build, and (line_paths) the paths of the release
# line LINE (default: the newest), which carry owns (internal/line).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/_output/tools"
CARRY="$TOOLS/carry"

log() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# carry runs the project's Go tool, built on first use (cached by go) with
# the go settings of every other go command (internal/build/settings.env,
# one NAME=value per line, which carry cannot print before it is built):
# built with other settings, the packages it shares with the project's
# tests and the e2e tests would be compiled twice in a cold run.
carry() {
	if [[ ! -x "$CARRY" || -n "$(find "$ROOT/cmd" "$ROOT/internal" "$ROOT/go.mod" "$ROOT/go.sum" -newer "$CARRY" -print -quit)" ]]; then
		local settings
		# stderr: callers capture carry's output, $(carry ...).
		printf 'carry: building %s (cmd/carry)\n' "${CARRY#"$ROOT"/}" >&2
		mapfile -t settings < <(grep -Ev '^[[:space:]]*(#|$)' "$ROOT/internal/build/settings.env")
		(cd "$ROOT" && env "${settings[@]}" go build -o "$CARRY" ./cmd/carry)
	fi
	(cd "$ROOT" && "$CARRY" "$@")
}

# Every go command on the trees and their worktrees runs with the same
# settings, so the build cache is shared between them (README, build
# cache); they, and the programs the scripts build (BINARIES,
# CLUSTER_PROGRAMS), are internal/build's.
build_env=$(carry build-env) || exit 1
eval "$build_env"

# line_paths sets LINE, LINE_DIR, OUT, TREE, BIN, TEST_BIN, UPSTREAM_BIN and
# CLUSTER_DIR for the line
# LINE names (the newest when LINE is empty); an unknown line fails, naming
# the lines there are.
line_paths() {
	local paths
	paths=$(carry paths) || exit 1
	eval "$paths"
}

# upstream_worktree sets UPSTREAM_SRC to plain upstream of the line's
# release: a worktree of the line's tree at its first commit (`upstream
# vX.Y.Z`), made anew when the tree was removed or fetched again (call
# line_paths first).
upstream_worktree() {
	local base head
	base=$(git -C "$TREE" rev-list --max-parents=0 HEAD)
	UPSTREAM_SRC="$OUT/upstream/src"
	if ! head=$(git -C "$UPSTREAM_SRC" rev-parse HEAD 2>/dev/null) || [[ "$(git -C "$UPSTREAM_SRC" rev-parse --path-format=absolute --git-common-dir)" != "$(git -C "$TREE" rev-parse --path-format=absolute --git-common-dir)" ]]; then
		log "upstream: line $LINE: worktree of upstream ($base) in $UPSTREAM_SRC"
		rm -rf "$UPSTREAM_SRC"
		git -C "$TREE" worktree prune
		git -C "$TREE" worktree add --quiet --detach "$UPSTREAM_SRC" "$base"
	elif [[ "$head" != "$base" ]]; then
		git -C "$UPSTREAM_SRC" checkout --quiet --force --detach "$base"
	fi
}

# perf_profile_args sets the array perf_profile to the scheduler_perf flags
# that PERF_PROFILE asks for: a comma-separated list of the profiles to
# write of each run's measured phase, of cpu, mem (allocations), block and
# mutex (every blocking event and every contended lock: they slow the run,
# so its figures are not comparable with runs without them) and trace (an
# execution trace); 1 is cpu, 0 or unset none. Anything else is an error.
perf_profile_args() {
	local kinds kind
	perf_profile=()
	case "${PERF_PROFILE:-0}" in
	0) ;;
	1) perf_profile=(-perf-cpuprofile) ;;
	*)
		IFS=, read -r -a kinds <<<"$PERF_PROFILE,"
		for kind in "${kinds[@]}"; do
			case "$kind" in
			cpu | mem | block | mutex) perf_profile+=("-perf-${kind}profile") ;;
			trace) perf_profile+=(-perf-trace) ;;
			*) die "PERF_PROFILE=$PERF_PROFILE: '$kind' is not a profile; want 1 (cpu), 0 (none) or a comma-separated list of cpu, mem, block, mutex and trace" ;;
			esac
		done
		;;
	esac
	# shellcheck disable=SC2034 # read by the scripts that source this file
	readonly perf_profile
}

# perf_setup DIR RESULT [NAME=TREE...]: what make perf and make
# perf-upstream share before their runs: benchstat built into
# _output/tools; RESULT started with the machine's lines, which benchstat
# shows as the results' configuration; and for each NAME=TREE a directory
# DIR/srcdir-NAME where k8s.io/kubernetes is TREE, the run's TEST_SRCDIR:
# built with -trimpath, the in-process kube-apiserver finds its
# certificate fixtures through TEST_SRCDIR/TEST_WORKSPACE, as under bazel.
perf_setup() {
	local dir=$1 result=$2 pair
	shift 2
	log "perf: building benchstat (tools/benchstat)"
	(cd "$ROOT/tools/benchstat" && go build -o "$TOOLS/benchstat" golang.org/x/perf/cmd/benchstat)
	{
		printf 'goos: %s\ngoarch: %s\n' "$(go env GOOS)" "$(go env GOARCH)"
		printf 'cpu: %s\n' "$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	} >"$result"
	for pair in "$@"; do
		mkdir -p "$dir/srcdir-${pair%%=*}/k8s.io"
		ln -s "${pair#*=}" "$dir/srcdir-${pair%%=*}/k8s.io/kubernetes"
	done
}
