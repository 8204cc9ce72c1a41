#!/usr/bin/env bash
# lines: print every release line: pinned release, newest release of its
# minor the module proxy serves, revision, patches, end of life. Also
# written as JSON to _output/lines.json.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

carry lines "$@"
