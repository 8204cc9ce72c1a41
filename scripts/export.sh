#!/usr/bin/env bash
# export: regenerate patches/*.patch and patches/series from the commits of
# the patched tree (deterministic: an unchanged tree exports no diff).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

carry export
