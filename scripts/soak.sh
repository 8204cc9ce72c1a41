#!/usr/bin/env bash
# soak: the S2 stress scenario of the local-dynamic integration tests with
# many iterations (SOAK_N, default 100) against a real apiserver and etcd.
# The test prints its seed and the over-commit count of every iteration and
# fails on any over-commit.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

n=${SOAK_N:-100}
log "soak: S2 with $n iterations (LOCALDYNAMIC_SOAK_N=$n)"
cd "$TREE"
PATH="$BIN:$PATH" LOCALDYNAMIC_SOAK_N="$n" \
	go test -count=1 -timeout 120m ./test/integration/localdynamic -run '^TestLocalDynamicS2' -v
