#!/usr/bin/env bash
# line-proofs: the line proof of every supported line but the newest (what
# make test without LINE gives them; scripts/test.sh runs this beside the
# newest line's full proof): fetch and apply the line, then the harness's
# line proof (lint, exact apply, every Test: that is not an integration
# test). Fails when one line's proof fails, after trying every line.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

read -r -a supported < <(carry lines -offline -supported)
newest=${supported[-1]}
line_proof=$(carry proof-tests line)
failed=()
for l in "${supported[@]}"; do
	[[ "$l" == "$newest" ]] && continue
	log "line-proofs: line $l: fetch, apply"
	if ! { LINE=$l "$ROOT/scripts/fetch.sh" && LINE=$l "$ROOT/scripts/apply.sh"; }; then
		failed+=("$l")
		continue
	fi
	log "test: line $l: line proof"
	if ! (cd "$ROOT" && LINE=$l KUBE_CARRY_PROOF=line go test -count=1 -timeout "${TEST_TIMEOUT:-60m}" ./tests/... -v -run "$line_proof"); then
		failed+=("$l")
	fi
done
if ((${#failed[@]} > 0)); then
	die "line-proofs: the line proof failed for ${failed[*]}"
fi
log "line-proofs: ${supported[*]:0:${#supported[@]}-1} proven"
