#!/usr/bin/env bash
# perf: the scheduler's cost of the local-dynamic capacity check, measured
# the way upstream measures the scheduler: scheduler_perf's
# SchedulingWaitForFirstConsumer workloads at PERF_NODES nodes (1000, or
# 5000 with the pod counts of upstream's threshold workloads; variants
# plain, localdynamic, csistoragecapacity and
# localdynamic-csistoragecapacity, the fork's capacity source of
# CSIStorageCapacity objects, where the line's workloads have it; each pod
# has one claim to provision, bound by a fake provisioner as soon as its
# node is selected) and, at 1000 nodes, upstream's SchedulingCSIPVs/1000Nodes
# (pre-bound PVs) as the reference, in ./test/integration/scheduler_perf/volumes
# (at 5000 nodes make perf-upstream runs upstream's own workloads).
# PERF_COUNT (5) repeats each of them; PERF_CSI_COUNT (PERF_COUNT)
# repeats csistoragecapacity alone (0 skips it: on a tree without
# volumebinding-csistoragecapacity-index, upstream's check schedules about
# 3.6 pods/s on 2 cores and one run takes a quarter of an hour).
# Every run of a benchmark is a process of its own, and the benchmarks
# take turns (plain, localdynamic, the reference; then localdynamic, the
# reference, plain; ...): in one process each run of a workload is slower
# than the one before (the first run of plain 78.8 pods/s, its fifth 71.3),
# so running one variant's five runs after the other's favoured the first.
# PERF_BENCH, -bench regular expressions separated by spaces, replaces the
# selections; each is run PERF_COUNT times in turn with the others (one
# that matches several benchmarks runs them in one process, in order).
# PERF_PROFILE (cpu, mem, block, mutex, trace, separated by commas; 1 is
# cpu) writes those profiles of each run (scheduler_perf's -perf-cpuprofile
# and the like; see perf_profile_args in lib.sh).
# Each run's results are read from scheduler_perf's data items, with the
# process's peak RSS (max-rss-B), by carry perf-run (internal/perf).
# Writes _output/<line>/perf/<time>/: results.txt (the benchmark lines, for
# benchstat), the log and scheduler_perf's data items and profiles; prints
# benchstat of the variants side by side and of the reference, and, when
# plain ran, each variant against plain paired by round (carry perf-pairs).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

count=${PERF_COUNT:-5}
perf_profile_args
csi_count=${PERF_CSI_COUNT:-$count}
nodes=${PERF_NODES:-1000}
config="$TREE/test/integration/scheduler_perf/volumes/performance-config.yaml"
# The sizes of the workloads make perf runs (label wait-for-first-consumer).
sizes=$( (grep -s -A1 -E '^  - name: [0-9]+Nodes/variant=plain$' "$config" || true) |
	grep -B1 'labels: \[wait-for-first-consumer\]' | grep -oE '[0-9]+Nodes' | sed 's/Nodes$//' | paste -sd ' ' || true)
if [[ " $sizes " != *" $nodes "* ]]; then
	die "perf: PERF_NODES=$nodes: line $LINE has no SchedulingWaitForFirstConsumer workloads of that size for make perf (sizes: ${sizes:-none})"
fi
# One pattern per benchmark: -bench matches level by level, and a
# benchmark that only matches the first levels of a pattern (the reference
# has no variant level) runs once, unreported.
wffc=BenchmarkPerfScheduling/SchedulingWaitForFirstConsumer/${nodes}Nodes
runs=(
	"$wffc/variant=plain\$ $count"
	"$wffc/variant=localdynamic\$ $count"
)
if ((nodes == 1000)); then
	runs+=("BenchmarkPerfScheduling/SchedulingCSIPVs/1000Nodes\$ $count")
fi
if ((csi_count > 0)); then
	runs+=("$wffc/variant=csistoragecapacity\$ $csi_count")
fi
if grep -q "name: ${nodes}Nodes/variant=localdynamic-csistoragecapacity\$" "$config"; then
	runs+=("$wffc/variant=localdynamic-csistoragecapacity\$ $count")
fi
if [[ -n "${PERF_BENCH:-}" ]]; then
	runs=()
	read -r -a patterns <<<"$PERF_BENCH"
	for pattern in "${patterns[@]}"; do
		runs+=("$pattern $count")
	done
fi
stamp=$(date -u +%Y%m%dT%H%M%SZ)
dir="$OUT/perf/$stamp"
mkdir -p "$dir"
log_file="$dir/perf.log"
result="$dir/results.txt"

perf_setup "$dir" "$result" "fork=$TREE"
printf 'pkg: k8s.io/kubernetes/test/integration/scheduler_perf/volumes\n' >>"$result"
: >"$log_file"
# logged WHAT CMD...: runs CMD with its output in the log; on failure shows
# the log's end and stops, saying that WHAT failed.
logged() {
	local what=$1
	shift
	"$@" >>"$log_file" 2>&1 || {
		tail -n 50 "$log_file" >&2
		die "perf: $what failed (log: $log_file)"
	}
}
log "perf: line $LINE: building scheduler_perf's volumes benchmarks"
(cd "$TREE" && logged "building ./test/integration/scheduler_perf/volumes" go test -c -o "$dir/volumes.test" ./test/integration/scheduler_perf/volumes)

rounds=0
for run in "${runs[@]}"; do
	rounds=$((${run##* } > rounds ? ${run##* } : rounds))
done
# go test runs a test binary in its package's directory: the workloads'
# templates are found relative to it.
cd "$TREE/test/integration/scheduler_perf/volumes"
for ((round = 0; round < rounds; round++)); do
	benches=()
	for run in "${runs[@]}"; do
		if ((round < ${run##* })); then
			benches+=("${run% *}")
		fi
	done
	for ((i = 0; i < ${#benches[@]}; i++)); do
		# Each round starts one benchmark later than the one before.
		bench=${benches[(round + i) % ${#benches[@]}]}
		log "perf: line $LINE: round $((round + 1))/$rounds: scheduler_perf -bench '$bench' (log: $log_file)"
		# scheduler_perf starts etcd from PATH; ARTIFACTS is where its
		# per-workload logs and profiles go.
		PATH="$BIN:$PATH" ARTIFACTS="$dir" TEST_SRCDIR="$dir/srcdir-fork" TEST_WORKSPACE=. \
			carry perf-run -dir "$PWD" -items "$dir" -log "$log_file" -results "$result" -- \
			"$dir/volumes.test" -test.timeout 0 -test.run '^$' \
			-test.bench "$bench" -test.benchtime=1x -test.count=1 \
			-perf-scheduling-label-filter=wait-for-first-consumer -data-items-dir="$dir" "${perf_profile[@]}" ||
			die "perf: scheduler_perf -bench '$bench' failed (log: $log_file)"
	done
done

grep -q '^BenchmarkPerfScheduling/' "$result" || die "perf: no benchmark ran (log: $log_file)"

log "perf: the variants of SchedulingWaitForFirstConsumer (benchstat -col /variant $result)"
"$TOOLS/benchstat" -col /variant -filter '.fullname:/SchedulingWaitForFirstConsumer/' "$result"
if grep -q '^BenchmarkPerfScheduling/SchedulingWaitForFirstConsumer/.*/variant=plain[[:space:]]' "$result"; then
	log "perf: the variants against plain, paired by round (carry perf-pairs -key variant -base plain $result)"
	carry perf-pairs -key variant -base plain "$result"
fi
if grep -q '^BenchmarkPerfScheduling/SchedulingCSIPVs/' "$result"; then
	log "perf: the reference (pre-bound PVs)"
	"$TOOLS/benchstat" -filter '.fullname:/SchedulingCSIPVs/' "$result"
fi
log "perf: results in $dir"
