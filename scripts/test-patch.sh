#!/usr/bin/env bash
# test-patch: the series lint and one patch's checks on the line (LINE,
# default the newest): P=<patch file name>. The harness runs with the go
# settings of every other go command (scripts/lib.sh).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

if [[ -z "${P:-}" ]]; then
	die "usage: make test-patch P=<patch file name> [LINE=vA.B]"
fi
line_paths
log "test-patch: line $LINE: ${P%.patch}"
cd "$ROOT"
go test -count=1 -timeout "${TEST_TIMEOUT:-60m}" ./tests/... -v -run "TestSeries/(lint|${P%.patch})\$"
