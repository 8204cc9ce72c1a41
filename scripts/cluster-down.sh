#!/usr/bin/env bash
# cluster-down: stop the cluster this machine runs (make cluster-down) and
# remove every process, mount, network namespace, cgroup and log link it
# made, also after a component died or make cluster was interrupted. The
# cluster's folder (logs, certificates) stays.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

carry cluster-down
