#!/usr/bin/env bash
# lint: the developer checks, in seconds and before any fetch: every
# line's folder (series = folder, trailers, mutants named by guards),
# the scripts checked by shellcheck, gofmt and go vet of the Go code
# (gofmt only of examples/, which build against a patched tree). The go commands run
# with the settings of every other (scripts/lib.sh), so that what go vet
# compiles is what the tests use next.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

log "lint: every line's folder"
go test -count=1 -run '^(TestLines|TestCheckKinds)$' ./tests
log "lint: shellcheck"
shellcheck -x scripts/*.sh ci/run .ci/run
log "lint: gofmt"
out=$(gofmt -l cmd internal tests e2e examples)
if [[ -n "$out" ]]; then
	printf 'gofmt needed:\n%s\n' "$out" >&2
	exit 1
fi
log "lint: go vet"
go vet ./cmd/... ./internal/... ./tests/... ./e2e/...
