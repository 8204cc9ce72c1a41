#!/usr/bin/env bash
# push: push the line's kube-scheduler image (made by `make release`) to
# the registry it was named for, or to REGISTRY, with the credentials of
# docker/podman login.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

layout="$OUT/release/kube-scheduler.oci"
[[ -d "$layout" ]] || die "$layout does not exist: run make release LINE=$LINE first"
if [[ -n "${REGISTRY:-}" ]]; then
	carry push -layout "$layout" -registry "$REGISTRY"
else
	carry push -layout "$layout"
fi
