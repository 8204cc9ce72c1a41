#!/usr/bin/env bash
# matrix: apply-only check of a line's series against upstream releases
# (-newest: the newest releases the module proxy serves).
# Prints a patch × version table (clean / merged / conflict / upstream) and
# writes it as markdown to _output/matrix.md. Each release's tree is kept
# under _output/matrix/<version>/kubernetes and reused on later runs.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

[[ $# -ge 1 ]] || die "usage: scripts/matrix.sh vX.Y.Z... | -newest"
carry matrix "$@"
