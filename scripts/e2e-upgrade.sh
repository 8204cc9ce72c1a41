#!/usr/bin/env bash
# e2e-upgrade: walk the upgrade path of docs/upgrade.md on a real cluster
# (make cluster): start on the oldest supported line with workloads that
# hold local-dynamic volumes with data and pods pending for capacity,
# upgrade one minor at a time to the newest line (kube-apiserver,
# kube-controller-manager, the scheduler, then each node's kubelet after a
# drain), roll the scheduler and the kubelets back one line, and check
# after every step; prints the table and writes it to
# _output/e2e/upgrade.md. Builds what each supported line's cluster needs
# first (make, make etcd, make cluster-binaries). Needs root; no cluster
# may be running.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

read -r -a supported < <(carry lines -offline -supported)
for l in "${supported[@]}"; do
	log "e2e-upgrade: line $l: fetch, apply, build, etcd, cluster binaries"
	LINE=$l "$ROOT/scripts/fetch.sh"
	LINE=$l "$ROOT/scripts/apply.sh"
	LINE=$l "$ROOT/scripts/build.sh"
	LINE=$l "$ROOT/scripts/etcd.sh"
	LINE=$l "$ROOT/scripts/cluster-binaries.sh"
done
log "e2e-upgrade: ${supported[*]}"
(cd "$ROOT" && go test -count=1 -timeout 60m ./e2e/ -v -run '^TestUpgradeWalk$')
