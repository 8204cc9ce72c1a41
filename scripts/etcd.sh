#!/usr/bin/env bash
# etcd: build the etcd that the line's integration tests run against into
# _output/<line>/bin/etcd, from the Go module proxy (tools/etcd/<minor>/
# pins the version upstream's hack/lib/etcd.sh names for the line's pin).
# Cached: rebuilt only when the version changes.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

read -r version tooldir < <(carry etcd-version) || exit 1
if [[ -x "$BIN/etcd" ]] && [[ "$("$BIN/etcd" --version | head -n 1)" == "etcd Version: ${version#v}" ]]; then
	log "etcd: line $LINE: $BIN/etcd $version up to date"
	exit 0
fi
log "etcd: line $LINE: building etcd $version (go.etcd.io/etcd/server/v3, $tooldir)"
mkdir -p "$BIN"
(cd "$ROOT/$tooldir" && go build -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
log "etcd: $("$BIN/etcd" --version | head -n 1)"
