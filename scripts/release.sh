#!/usr/bin/env bash
# release: what operators deploy, for the line LINE, into
# _output/<line>/release: kube-scheduler and kubelet cross-compiled for
# linux/amd64 and linux/arm64 (CGO off, reproducible, stamped like the
# build), then `carry release`: a multi-arch OCI image of kube-scheduler
# (layout, OCI archive, docker archives), an SPDX SBOM per binary, release
# notes from the patches' metadata and SHA256SUMS over everything.
# REGISTRY (default localhost/kube-carry) names the image:
# REGISTRY/kube-scheduler:vX.Y.Z-carry.N.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

PLATFORMS=(linux/amd64 linux/arm64)
registry=${REGISTRY:-localhost/kube-carry}
dir="$OUT/release"

carry check-tree
version=$(carry version)
ldflags=$(carry ldflags)
commit=$(git -C "$TREE" rev-parse HEAD)
# The release is made anew; its binaries come from a clean tree.
rm -rf "$dir"
for platform in "${PLATFORMS[@]}"; do
	os=${platform%/*} arch=${platform#*/}
	mkdir -p "$dir/$os-$arch"
	for b in "${BINARIES[@]}"; do
		log "release: line $LINE: $b $version for $platform ($commit)"
		(cd "$TREE" && GOOS=$os GOARCH=$arch go build -ldflags "$ldflags" -o "$dir/$os-$arch/$b" "./cmd/$b")
	done
done
carry release -dir "$dir" -registry "$registry"
log "release: line $LINE: $dir"
