#!/usr/bin/env bash
# build: kube-scheduler and kubelet from the line's patched tree into
# _output/<line>/bin,
# version-stamped vX.Y.Z-carry.N, reproducible, with SHA256SUMS.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

carry check-tree
version=$(carry version)
ldflags=$(carry ldflags)
commit=$(git -C "$TREE" rev-parse HEAD)
# The inputs of a build: tree commit, fork version, toolchain, flags. When
# they match the last build and the binaries still match their sums, there
# is nothing to do.
stamp="$version $commit $(go env GOVERSION GOOS GOARCH | tr '\n' ' ')$GOFLAGS CGO_ENABLED=$CGO_ENABLED ${BINARIES[*]}"
if [[ -f "$BIN/.build-inputs" && "$(cat "$BIN/.build-inputs")" == "$stamp" ]] &&
	(cd "$BIN" && sha256sum --quiet --check SHA256SUMS 2>/dev/null); then
	log "build: line $LINE: ${BINARIES[*]} $version up to date"
	exit 0
fi

mkdir -p "$BIN"
rm -f "$BIN/.build-inputs"
for b in "${BINARIES[@]}"; do
	log "build: line $LINE: $b $version ($commit)"
	(cd "$TREE" && go build -ldflags "$ldflags" -o "$BIN/$b" "./cmd/$b")
done
(cd "$BIN" && sha256sum "${BINARIES[@]}" > SHA256SUMS)
printf '%s' "$stamp" > "$BIN/.build-inputs"
log "build: wrote $BIN/SHA256SUMS"
sed 's/^/  /' "$BIN/SHA256SUMS"
