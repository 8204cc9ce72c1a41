#!/usr/bin/env bash
# e2e: the field's scenarios on a real cluster of the line (make cluster),
# each with the fork's kube-scheduler and kubelet and with plain upstream's
# of the same release, with the project's node-local CSI driver; prints
# the fork-vs-upstream table and writes it to _output/<line>/e2e/report.md.
# Needs root, and the line's cluster binaries (make cluster-binaries); no
# cluster may be running. E2E_SCENARIO=<part of a name> runs one scenario.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

log "e2e: line $LINE: scenarios on the cluster, fork vs upstream"
(cd "$ROOT" && LINE=$LINE go test -count=1 -timeout 60m ./e2e/ -v -run '^TestScenarios$')
