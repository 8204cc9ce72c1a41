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
# line proof:
# lint, exact apply, build, etcd, every Test: (the integration scenarios
# among them) and the checks of the built binaries. Each line is fetched,
# applied and built first (cached when nothing changed).
# RUN (a go test -run pattern) narrows the harness; TEST_TIMEOUT bounds it.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

timeout=${TEST_TIMEOUT:-60m}

# prepare LINE PROOF: what the proof needs built; the full proof also runs
# the line as a cluster (TestCluster), which needs the cluster's binaries.
prepare() {
	LINE=$1 "$ROOT/scripts/fetch.sh"
	LINE=$1 "$ROOT/scripts/apply.sh"
	LINE=$1 "$ROOT/scripts/build.sh"
	LINE=$1 "$ROOT/scripts/etcd.sh"
	if [[ $2 == full ]]; then
		LINE=$1 "$ROOT/scripts/cluster-binaries.sh"
	fi
}

# harness LINE PROOF [RUN]
harness() {
	local run=${3:-${RUN:-}}
	log "test: line $1: $2 proof"
	(cd "$ROOT" && LINE=$1 KUBE_CARRY_PROOF=$2 go test -count=1 -timeout "$timeout" ./tests/... -v -run "$run")
}

log "test: the tooling's own tests (cmd/, internal/)"
(cd "$ROOT" && go test -count=1 ./cmd/... ./internal/...)

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
harness "$newest" full
LINE=$newest "$ROOT/scripts/e2e.sh"
for l in "${supported[@]}"; do
	[[ "$l" == "$newest" ]] && continue
	prepare "$l" line
	harness "$l" line '^(TestSeries|TestBinaries|TestEtcdBinary)$'
done
log "test: full proof of $newest; line proof of ${supported[*]:0:${#supported[@]}-1}"
