#!/usr/bin/env bash
# etcd: build the etcd that integration tests run against into
# _output/bin/etcd, from the Go module proxy (tools/etcd pins the version
# upstream's hack/lib/etcd.sh names for the pin). Cached: rebuilt only when
# the version changes.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

version=$(carry etcd-version)
if [[ -x "$BIN/etcd" ]] && [[ "$("$BIN/etcd" --version | head -n 1)" == "etcd Version: ${version#v}" ]]; then
	log "etcd: $BIN/etcd $version up to date"
	exit 0
fi
log "etcd: building etcd $version (go.etcd.io/etcd/server/v3)"
mkdir -p "$BIN"
(cd "$ROOT/tools/etcd" && go build -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
log "etcd: $("$BIN/etcd" --version | head -n 1)"
