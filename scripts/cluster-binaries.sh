#!/usr/bin/env bash
# cluster-binaries: what make cluster runs besides the release binaries,
# into _output/<line>/bin: kube-apiserver, kube-controller-manager, kubectl
# and agnhost (upstream's test image program, the cluster's pause and
# workload image) from the line's patched tree, stamped with the fork
# version; and into _output/<line>/upstream/bin plain upstream's
# kube-scheduler and kubelet of the same release, from the tree's first
# commit (`upstream vX.Y.Z`), for scenarios that compare the fork with
# upstream. None of them is part of the release. Cached like the build.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

carry check-tree
version=$(carry version)

# build_into DIR SRC LDFLAGS COMMIT PROGRAM...: go build each ./cmd/PROGRAM
# (or the path given) of SRC into DIR, unless the same inputs built them.
build_into() {
	local dir=$1 src=$2 ldflags=$3 commit=$4
	shift 4
	local stamp
	stamp="$commit $(go env GOVERSION GOOS GOARCH | tr '\n' ' ')$GOFLAGS CGO_ENABLED=$CGO_ENABLED $ldflags"
	mkdir -p "$dir"
	for p in "$@"; do
		local name=${p##*/}
		if [[ -x "$dir/$name" && -f "$dir/.$name.inputs" && "$(cat "$dir/.$name.inputs")" == "$stamp" ]]; then
			log "cluster-binaries: line $LINE: $dir/$name up to date"
			continue
		fi
		log "cluster-binaries: line $LINE: $name ($commit)"
		rm -f "$dir/.$name.inputs"
		(cd "$src" && go build -ldflags "$ldflags" -o "$dir/$name" "./$p")
		printf '%s' "$stamp" > "$dir/.$name.inputs"
	done
}

build_into "$BIN" "$TREE" "$(carry ldflags)" "$(git -C "$TREE" rev-parse HEAD)" "${CLUSTER_PROGRAMS[@]}"

# Plain upstream from a worktree of the tree at its first commit.
upstream_worktree
base=$(git -C "$UPSTREAM_SRC" rev-parse HEAD)
build_into "$UPSTREAM_BIN" "$UPSTREAM_SRC" "$(carry ldflags -upstream)" "$base" "${BINARIES[@]/#/cmd/}"
log "cluster-binaries: line $LINE: $version cluster binaries in $BIN, upstream $(carry upstream) in $UPSTREAM_BIN"
