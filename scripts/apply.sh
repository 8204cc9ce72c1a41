#!/usr/bin/env bash
# apply: bring the line's patched tree to its series, one commit per patch.
# Idempotent; refuses (changing nothing) when the tree holds work that is in
# no patch file.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

carry apply
