#!/usr/bin/env bash
# test: prove release lines with the harness (go test ./tests).
#   LINE=vA.B scripts/test.sh   the full proof of that line
#   scripts/test.sh             the full proof of the newest line, then the
#                               line proof of every other supported line
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
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

timeout=${TEST_TIMEOUT:-60m}

# prepare LINE PROOF: what the proof needs: the patched tree; the full
# proof also the built binaries, etcd, and the cluster's binaries (it runs
# the line as a cluster, TestCluster).
prepare() {
	LINE=$1 "$ROOT/scripts/fetch.sh"
	LINE=$1 "$ROOT/scripts/apply.sh"
	if [[ $2 == full ]]; then
		LINE=$1 "$ROOT/scripts/build.sh"
		LINE=$1 "$ROOT/scripts/etcd.sh"
		LINE=$1 "$ROOT/scripts/cluster-binaries.sh"
	fi
}

# The tests only `make test LINE=vA.B` runs (the multi-arch release and its
# image, the matrix on real releases, fetching every module from git, the
# out-of-tree scheduler built against the line: the tooling around the line
# rather than its patches, about 13 minutes of a cold run), and the line
# proof's tests, are internal/harness's.
per_line_only=$(carry proof-tests per-line-only)
line_proof=$(carry proof-tests line)

# harness LINE PROOF [RUN [SKIP]]
harness() {
	local run=${3:-${RUN:-}} skip=${4:-}
	log "test: line $1: $2 proof${skip:+ (without $skip)}"
	(cd "$ROOT" && LINE=$1 KUBE_CARRY_PROOF=$2 go test -count=1 -timeout "$timeout" ./tests/... -v -run "$run" -skip "$skip")
}

log "test: the tooling's own tests (cmd/, internal/)"
(cd "$ROOT" && go test -count=1 -timeout "$timeout" ./cmd/... ./internal/...)

if [[ -n "${LINE:-}" ]]; then
	line_paths
	prepare "$LINE" full
	harness "$LINE" full
	"$ROOT/scripts/e2e.sh"
	exit 0
fi

read -r -a supported < <(carry lines -offline -supported)
newest=${supported[-1]}
prepare "$newest" full
harness "$newest" full "${RUN:-}" "$per_line_only"
LINE=$newest "$ROOT/scripts/e2e.sh"
for l in "${supported[@]}"; do
	[[ "$l" == "$newest" ]] && continue
	prepare "$l" line
	harness "$l" line "$line_proof"
done
log "test: full proof of $newest (without $per_line_only: make test LINE=$newest); line proof of ${supported[*]:0:${#supported[@]}-1}"
