#!/usr/bin/env bash
# test: prove release lines with the harness (go test ./tests).
#   LINE=vA.B scripts/test.sh   the full proof of that line
#   scripts/test.sh             the full proof of the newest line, and
#                               beside it the line proof of every other
#                               supported line (scripts/line-proofs.sh)
# The full proof: series lint, exact apply, every Test:, the touched
# packages' upstream suites, regression proofs, mutants, the binary smoke
# test (of the line's kube-scheduler and of examples/out-of-tree-scheduler
# built against the line), the matrix, and the checks of the built
# binaries, the line run as a cluster on this machine (TestCluster), and the
# field's scenarios on that cluster, fork vs upstream (scripts/e2e.sh). The
# line proof: lint, exact apply, and every Test: that is not an
# integration test (those need the line's etcd and kube-apiserver's
# compile); it builds nothing, which leaves CI's budget for the newest
# line's proof. Each line is fetched and applied first, and the newest
# built (cached when nothing changed).
# Without LINE, the newest line's full proof leaves out the checks of the
# release engineering around the line (per_line_only below): they run in
# `make test LINE=vA.B`, which the users' workflow (ci/github-workflow.yml)
# runs for every line, so that `make test` stays under CI's time budget.
# RUN (a go test -run pattern) narrows the harness; TEST_TIMEOUT bounds it.
# On a TERM, INT or HUP, what still runs TEST_STOP_GRACE seconds (default
# 180) after the script passed the TERM on is killed.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

timeout=${TEST_TIMEOUT:-60m}
stop_grace=${TEST_STOP_GRACE:-180}
[[ "$stop_grace" =~ ^[0-9]+$ ]] || die "TEST_STOP_GRACE=$stop_grace: want a whole number of seconds, how long a stopped step may take before it is killed"

# prepare LINE: what the full proof needs: the patched tree, the built
# binaries, etcd, and the cluster's binaries (it runs the line as a
# cluster, TestCluster).
prepare() {
	LINE=$1 "$ROOT/scripts/fetch.sh"
	LINE=$1 "$ROOT/scripts/apply.sh"
	LINE=$1 "$ROOT/scripts/build.sh"
	LINE=$1 "$ROOT/scripts/etcd.sh"
	LINE=$1 "$ROOT/scripts/cluster-binaries.sh"
}

# The tests only `make test LINE=vA.B` runs (the multi-arch release and its
# image, the matrix on real releases, fetching every module from git, the
# out-of-tree scheduler built against the line: the tooling around the line
# rather than its patches, about 13 minutes of a cold run), and the line
# proof's tests, are internal/harness's.
per_line_only=$(carry proof-tests per-line-only)

# tooling_tests: the tooling's own tests.
tooling_tests() {
	(cd "$ROOT" && go test -count=1 -timeout "$timeout" ./cmd/... ./internal/...)
}

# harness LINE PROOF [RUN [SKIP]]
harness() {
	local run=${3:-${RUN:-}} skip=${4:-}
	log "test: line $1: $2 proof${skip:+ (without $skip)}"
	(cd "$ROOT" && LINE=$1 KUBE_CARRY_PROOF=$2 go test -count=1 -timeout "$timeout" ./tests/... -v -run "$run" -skip "$skip")
}

# Without LINE, the other lines' line proofs (scripts/line-proofs.sh) run
# beside everything else, at the lowest CPU and I/O priority: they take
# the CPU that the newest line's proof leaves idle while it waits (on its
# clusters, etcd, kubelets and provisioners) and slow it down by next to
# nothing. Their output goes to _output/line-proofs.log, printed at the
# end; they may wait for the CPU for most of the run, hence their longer
# timeout. They stay in this script's process group (a CI that kills the
# group kills them too); when this script ends early they are stopped,
# with every process under them, and so is the step it was waiting for.
others=
others_log="$ROOT/_output/line-proofs.log"
descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		echo "$c"
		descendants "$c"
	done
}
# start_time PID: when the process started; empty when it is gone.
start_time() {
	ps -o lstart= -p "$1" 2>/dev/null || true
}
# stop_tree PID: stops the process and every process under it, and waits
# until they are gone: a process under it may take a while (the e2e
# tests stop their cluster), and may outlive PID. What still runs
# TEST_STOP_GRACE seconds (default 180) after the TERM is killed, with
# what it started since; a pid that another process has taken since the
# TERM (it started at another time) is left alone.
stop_tree() {
	if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
		local pids starts left pid i grace=$stop_grace
		mapfile -t pids < <(echo "$1"; descendants "$1")
		starts=()
		for pid in "${pids[@]}"; do
			starts+=("$(start_time "$pid")")
		done
		kill -TERM "${pids[@]}" 2>/dev/null || true
		# Not wait: it would wait for ever for a PID that ignores the TERM.
		for ((i = 0; i < grace * 10; i++)); do
			if ! kill -0 "${pids[@]}" 2>/dev/null; then
				wait "$1" 2>/dev/null || true
				return 0
			fi
			sleep 0.1
		done
		left=()
		for i in "${!pids[@]}"; do
			if [[ -n "${starts[i]}" && "$(start_time "${pids[i]}")" == "${starts[i]}" ]]; then
				left+=("${pids[i]}")
			fi
		done
		((${#left[@]} > 0)) || return 0
		mapfile -t -O "${#left[@]}" left < <(for pid in "${left[@]}"; do descendants "$pid"; done)
		log "test: still running ${grace} s after a TERM, killing: $(ps -o pid=,args= -p "$(IFS=,; echo "${left[*]}")" | tr '\n' ';')"
		kill -KILL "${left[@]}" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			if ! kill -0 "${left[@]}" 2>/dev/null; then
				wait "$1" 2>/dev/null || true
				return 0
			fi
			sleep 0.1
		done
		log "test: still running 10 s after a KILL: $(ps -o pid=,stat=,args= -p "$(IFS=,; echo "${left[*]}")" | tr '\n' ';')"
	fi
}
stop_others() {
	stop_tree "$step"
	if [[ -n "$others" ]] && kill -0 "$others" 2>/dev/null; then
		log "test: stopping the line proofs (log: ${others_log#"$ROOT"/})"
		stop_tree "$others"
	fi
}
# run CMD...: one step of the proof, in the background while this script
# waits for it. Bash runs a trap only between foreground commands, so with
# the step in the foreground a TERM sent to this script alone (not to its
# process group) would stop the line proofs only after the step ended, up
# to an hour later. With or without LINE, a TERM, INT or HUP stops the
# step (and the line proofs) and ends the script with 128 + the signal's
# number, as the signal would: 143, 130, 129.
step=
trap stop_others EXIT
trap 'stop_others; exit 143' TERM
trap 'stop_others; exit 130' INT
trap 'stop_others; exit 129' HUP
run() {
	local status=0
	"$@" &
	step=$!
	wait "$step" || status=$?
	step=
	return "$status"
}
if [[ -z "${LINE:-}" ]]; then
	read -r -a supported < <(carry lines -offline -supported)
	newest=${supported[-1]}
	others_lines=("${supported[@]:0:${#supported[@]}-1}")
	if ((${#others_lines[@]} > 0)); then
		mkdir -p "$ROOT/_output"
		log "test: the line proofs of ${others_lines[*]} run beside, at the lowest priority (log: ${others_log#"$ROOT"/})"
		TEST_TIMEOUT=${TEST_TIMEOUT:-120m} nice -n 19 ionice -c 3 "$ROOT/scripts/line-proofs.sh" >"$others_log" 2>&1 &
		others=$!
	fi
fi

log "test: the tooling's own tests (cmd/, internal/)"
run tooling_tests

if [[ -n "${LINE:-}" ]]; then
	line_paths
	run prepare "$LINE"
	run harness "$LINE" full
	run "$ROOT/scripts/e2e.sh"
	exit 0
fi

run prepare "$newest"
run harness "$newest" full "${RUN:-}" "$per_line_only"
run env LINE="$newest" "$ROOT/scripts/e2e.sh"
status=0
if [[ -n "$others" ]]; then
	log "test: waiting for the line proofs of ${others_lines[*]}"
	wait "$others" || status=$?
	others=
	log "test: the line proofs of ${others_lines[*]} (${others_log#"$ROOT"/}):"
	cat "$others_log"
fi
((status == 0)) || die "the line proof of ${others_lines[*]} failed (above; log ${others_log#"$ROOT"/})"
log "test: full proof of $newest (without $per_line_only: make test LINE=$newest); line proof of ${others_lines[*]}"
