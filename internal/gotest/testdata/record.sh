#!/usr/bin/env bash
# Records the go test -json streams of the fixture modules that
# gotest_test.go parses: ./record.sh in this directory (go1.26).
set -uo pipefail
cd "$(dirname "$0")"
export GOFLAGS=-trimpath GOWORK=off GOPROXY=off GOTOOLCHAIN=local
(cd assertion && go test -json -count=1 . >../assertion.jsonl)
(cd build && go test -json -count=1 . >../build.jsonl)
(cd timeout && go test -json -count=1 -timeout 2s . >../timeout.jsonl)
exit 0
