#!/usr/bin/env bash
# bench: scheduler throughput with local-dynamic storage, side by side with
# a plain WaitForFirstConsumer class and with CSIStorageCapacity (the
# tree's TestLocalDynamicThroughput against a real apiserver and etcd).
# BENCH_NODES (default 500), BENCH_PODS (5000), BENCH_BACKGROUND (20000),
# BENCH_VERBOSITY (2); BENCH_BUDGET (10m) ends the measurement of a
# configuration that has not bound all pods by then (CSIStorageCapacity
# binds about 1 pod/s), which then reports the pods bound so far;
# BENCH_CONFIGS, a regular expression, selects configurations (fork, wffc,
# csistoragecapacity; default all); BENCH_COUNT (1) repeats each, for
# benchstat. BENCH_PROFILE=1 writes a CPU profile of each configuration's
# scheduling phase to _output/<line>/bench/profile-<time>/.
# Prints the scenario's table and benchstat's, and keeps the benchmark
# lines in _output/<line>/bench/ for comparing runs with benchstat.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

nodes=${BENCH_NODES:-500}
pods=${BENCH_PODS:-5000}
background=${BENCH_BACKGROUND:-20000}
budget=${BENCH_BUDGET:-10m}
configs=${BENCH_CONFIGS:-fork|wffc|csistoragecapacity}
count=${BENCH_COUNT:-1}
# The log verbosity of the in-process components (integration tests default
# to 5): 2, as schedulers commonly run in production. Formatting debug logs
# would dominate the measurement.
verbosity=${BENCH_VERBOSITY:-2}
dir="$OUT/bench"
mkdir -p "$dir"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
log_file="$dir/throughput-$nodes-$stamp.log"
result="$dir/throughput-$nodes-$stamp.txt"
profile=""
if [[ "${BENCH_PROFILE:-}" == 1 ]]; then
	profile="$dir/profile-$stamp"
	mkdir -p "$profile"
fi

log "bench: building benchstat (tools/benchstat)"
(cd "$ROOT/tools/benchstat" && go build -o "$TOOLS/benchstat" golang.org/x/perf/cmd/benchstat)

log "bench: line $LINE: $nodes nodes, $pods pods, $background background volumes, budget $budget; configurations matching '$configs' of fork, wffc, csistoragecapacity, $count time(s) (log: $log_file)"
cd "$TREE"
PATH="$BIN:$PATH" \
	LOCALDYNAMIC_THROUGHPUT_NODES="$nodes" \
	LOCALDYNAMIC_THROUGHPUT_PODS="$pods" \
	LOCALDYNAMIC_THROUGHPUT_BACKGROUND="$background" \
	LOCALDYNAMIC_THROUGHPUT_CPUPROFILE="$profile" \
	LOCALDYNAMIC_THROUGHPUT_BUDGET="$budget" \
	go test -count="$count" -timeout 0 ./test/integration/localdynamic -run "^TestLocalDynamicThroughput\$/^($configs)\$" -v -args -v="$verbosity" >"$log_file" 2>&1 ||
	{
		tail -n 50 "$log_file" >&2
		die "bench: the throughput scenario failed (log: $log_file)"
	}

{
	echo "goos: $(go env GOOS)"
	echo "goarch: $(go env GOARCH)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores)"
	echo "pkg: k8s.io/kubernetes/test/integration/localdynamic"
	grep '^BenchmarkLocalDynamicThroughput' "$log_file"
} >"$result"

log "bench: the scenario's report"
grep -E '^ +throughput_test.go:[0-9]+: ' "$log_file" | sed -E 's/^ +throughput_test.go:[0-9]+: /  /'
log "bench: benchstat $result"
"$TOOLS/benchstat" "$result"
if [[ -n "$profile" ]]; then
	log "bench: CPU profiles in $profile (go tool pprof -top $profile/fork.cpu.pprof)"
fi
