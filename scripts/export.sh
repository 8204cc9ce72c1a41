#!/usr/bin/env bash
# export: regenerate the line's patches (patches/<line>/*.patch and series)
# from the commits of its patched tree (deterministic: an unchanged tree
# exports no diff; staged, so a kill leaves the old patches or the new).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

carry export
