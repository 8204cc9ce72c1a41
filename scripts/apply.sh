#!/usr/bin/env bash
# apply: bring the patched tree to patches/series, one commit per patch.
# Idempotent; refuses (changing nothing) when the tree holds work that is in
# no patch file.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

carry apply
