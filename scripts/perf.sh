#!/usr/bin/env bash
# perf: the scheduler's cost of the local-dynamic capacity check, measured
# the way upstream measures the scheduler: scheduler_perf's
# SchedulingWaitForFirstConsumer workloads at 1000 nodes (variants plain,
# localdynamic and csistoragecapacity; each pod has one claim to
# provision, bound by a fake provisioner as soon as its node is selected)
# and upstream's SchedulingCSIPVs/1000Nodes (pre-bound PVs) as the
# reference, in ./test/integration/scheduler_perf/volumes.
# PERF_COUNT (5) repeats plain, localdynamic and the reference;
# PERF_CSI_COUNT (1) repeats csistoragecapacity, which schedules about
# 3.6 pods/s on 2 cores (500 + 500 pods, one run is about 5 minutes; 0
# skips it).
# PERF_BENCH, a -bench regular expression, replaces both selections and is
# run PERF_COUNT times. PERF_PROFILE=1 writes a CPU profile of each run
# (scheduler_perf's -perf-cpuprofile).
# Writes _output/<line>/perf/<time>/: results.txt (the benchmark lines, for
# benchstat), the log and scheduler_perf's data items and profiles; prints
# benchstat of the variants side by side and of the reference.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

count=${PERF_COUNT:-5}
csi_count=${PERF_CSI_COUNT:-1}
# One go test per selection: -bench matches level by level, and a
# benchmark that only matches the first levels of a pattern (the reference
# has no variant level) runs once, unreported.
runs=(
	"BenchmarkPerfScheduling/SchedulingWaitForFirstConsumer/1000Nodes/variant=(plain|localdynamic)\$ $count"
	"BenchmarkPerfScheduling/SchedulingCSIPVs/1000Nodes\$ $count"
)
if ((csi_count > 0)); then
	runs+=("BenchmarkPerfScheduling/SchedulingWaitForFirstConsumer/1000Nodes/variant=csistoragecapacity\$ $csi_count")
fi
if [[ -n "${PERF_BENCH:-}" ]]; then
	runs=("$PERF_BENCH $count")
fi
stamp=$(date -u +%Y%m%dT%H%M%SZ)
dir="$OUT/perf/$stamp"
mkdir -p "$dir"
log_file="$dir/perf.log"
result="$dir/results.txt"
profile=()
if [[ "${PERF_PROFILE:-}" == 1 ]]; then
	profile=(-perf-cpuprofile)
fi

log "perf: building benchstat (tools/benchstat)"
(cd "$ROOT/tools/benchstat" && go build -o "$TOOLS/benchstat" golang.org/x/perf/cmd/benchstat)

# Built with -trimpath (lib.sh), the in-process kube-apiserver finds its
# certificate fixtures through TEST_SRCDIR/TEST_WORKSPACE, as under bazel:
# a directory where k8s.io/kubernetes is the tree.
mkdir -p "$dir/srcdir/k8s.io"
ln -s "$TREE" "$dir/srcdir/k8s.io/kubernetes"

cd "$TREE"
: >"$log_file"
for run in "${runs[@]}"; do
	bench=${run% *}
	n=${run##* }
	log "perf: line $LINE: scheduler_perf -bench '$bench', $n time(s) (log: $log_file)"
	# scheduler_perf starts etcd from PATH; ARTIFACTS is where its
	# per-workload logs and profiles go.
	PATH="$BIN:$PATH" ARTIFACTS="$dir" TEST_SRCDIR="$dir/srcdir" TEST_WORKSPACE=. \
		go test -timeout 0 ./test/integration/scheduler_perf/volumes -run '^$' \
		-bench "$bench" -benchtime=1x -count="$n" \
		-args -perf-scheduling-label-filter=wait-for-first-consumer -data-items-dir="$dir" "${profile[@]}" \
		>>"$log_file" 2>&1 ||
		{
			tail -n 50 "$log_file" >&2
			die "perf: scheduler_perf failed (log: $log_file)"
		}
done

{
	grep -E '^(goos|goarch|pkg|cpu):' "$log_file" | sort -u
	grep '^BenchmarkPerfScheduling/' "$log_file"
} >"$result"
grep -q '^BenchmarkPerfScheduling/' "$result" || die "perf: no benchmark ran (log: $log_file)"

log "perf: the variants of SchedulingWaitForFirstConsumer (benchstat -col /variant $result)"
"$TOOLS/benchstat" -col /variant -filter '.fullname:/SchedulingWaitForFirstConsumer/' "$result"
log "perf: the reference (pre-bound PVs)"
"$TOOLS/benchstat" -filter '.fullname:/SchedulingCSIPVs/' "$result"
log "perf: results in $dir"
