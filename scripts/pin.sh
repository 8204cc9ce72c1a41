#!/usr/bin/env bash
# pin: (re)compute the pin of an upstream release, patches/<line>/UPSTREAM
# (the line is the release's minor; a new minor starts an empty line): the
# h1: hash of k8s.io/kubernetes and of every staging module zip, from the Go
# module proxy.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

[[ $# -eq 1 ]] || die "usage: scripts/pin.sh vX.Y.Z"
carry pin "$1"
