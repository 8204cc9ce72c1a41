#!/usr/bin/env bash
# cluster-up: start the line as a cluster on this machine (make cluster):
# etcd, kube-apiserver, kube-controller-manager, the line's kube-scheduler,
# and NODES nodes (default 2), each a kubelet with its own containerd in a
# network namespace of its own. SCHEDULER=<binary> and KUBELET=<binary>
# swap in another build; UPSTREAM_BINARIES=1 runs plain upstream's
# kube-scheduler and kubelet of the same release. Needs root. The work is
# carry's (internal/cluster); this only passes the settings on.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

args=(-nodes "${NODES:-2}")
[[ -n "${SCHEDULER:-}" ]] && args+=(-scheduler "$SCHEDULER")
[[ -n "${KUBELET:-}" ]] && args+=(-kubelet "$KUBELET")
[[ -n "${UPSTREAM_BINARIES:-}" && "${UPSTREAM_BINARIES}" != 0 ]] && args+=(-upstream)
carry cluster-up "${args[@]}"
