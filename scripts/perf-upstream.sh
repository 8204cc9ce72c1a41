#!/usr/bin/env bash
# perf-upstream: what the fork costs a cluster that uses none of its
# features, measured on upstream's own scheduler_perf workloads at the
# sizes upstream sets its throughput thresholds at (5000 nodes):
# SchedulingCSIPVs/5000Nodes_5000Pods, SchedulingInTreePVs/5000Nodes_2000Pods
# and SchedulingMigratedInTreePVs/5000Nodes_5000Pods
# (./test/integration/scheduler_perf/volumes) and
# SchedulingWithMixedChurn/5000Nodes_10000Pods (./misc), each on the line's
# patched tree (tree=fork) and on plain upstream of the same release
# (tree=plain, a worktree of the tree's first commit), in the same run.
# PERF_COUNT (5) repeats each; every run is a process of its own, and the
# trees and workloads take turns (round 1: fork then plain; round 2: plain
# then fork; ...). PERF_UPSTREAM_BENCH, `package:-bench regular
# expression` pairs separated by spaces, replaces the workloads.
# A workload's threshold is upstream's CI machines' figure: a run below it
# fails in scheduler_perf, which carry perf-run (internal/perf) reports and
# reads the run from its data items all the same, with the process's peak
# RSS (max-rss-B). PERF_PROFILE (as in perf.sh; 1 is a CPU profile) writes
# profiles of each run's measured phase.
# Writes _output/<line>/perf-upstream/<time>/: results.txt (for benchstat),
# the log, and each tree's data items and profiles in fork/ and plain/;
# prints benchstat of the trees side by side, plain upstream as the base,
# and the fork against plain paired by round (carry perf-pairs).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
line_paths

count=${PERF_COUNT:-5}
perf_profile_args
benches=(
	"volumes:BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods\$"
	"volumes:BenchmarkPerfScheduling/SchedulingInTreePVs/5000Nodes_2000Pods\$"
	"volumes:BenchmarkPerfScheduling/SchedulingMigratedInTreePVs/5000Nodes_5000Pods\$"
	"misc:BenchmarkPerfScheduling/SchedulingWithMixedChurn/5000Nodes_10000Pods\$"
)
if [[ -n "${PERF_UPSTREAM_BENCH:-}" ]]; then
	read -r -a benches <<<"$PERF_UPSTREAM_BENCH"
fi
packages=()
for b in "${benches[@]}"; do
	pkg=${b%%:*}
	[[ "$b" == *:* && -n "$pkg" && "$b" != *: ]] || die "perf-upstream: '$b': want package:-bench regular expression (volumes:BenchmarkPerfScheduling/SchedulingCSIPVs/5000Nodes_5000Pods\$)"
	[[ -d "$TREE/test/integration/scheduler_perf/$pkg" ]] || die "perf-upstream: '$b': no package test/integration/scheduler_perf/$pkg in $TREE"
	[[ " ${packages[*]} " == *" $pkg "* ]] || packages+=("$pkg")
done

carry check-tree
upstream_worktree
declare -A trees=([fork]="$TREE" [plain]="$UPSTREAM_SRC")

stamp=$(date -u +%Y%m%dT%H%M%SZ)
dir="$OUT/perf-upstream/$stamp"
mkdir -p "$dir"
log_file="$dir/perf.log"
result="$dir/results.txt"
: >"$log_file"
perf_setup "$dir" "$result" "fork=${trees[fork]}" "plain=${trees[plain]}"
printf 'upstream: %s\n' "$(carry upstream)" >>"$result"

for tree in fork plain; do
	for pkg in "${packages[@]}"; do
		log "perf-upstream: line $LINE: building scheduler_perf's $pkg benchmarks ($tree tree)"
		(cd "${trees[$tree]}" && go test -c -o "$dir/$pkg-$tree.test" "./test/integration/scheduler_perf/$pkg" >>"$log_file" 2>&1) ||
			die "perf-upstream: building ./test/integration/scheduler_perf/$pkg of the $tree tree failed (log: $log_file)"
	done
done

for ((round = 0; round < count; round++)); do
	order=(fork plain)
	if ((round % 2 == 1)); then
		order=(plain fork)
	fi
	for ((i = 0; i < ${#benches[@]}; i++)); do
		# Each round starts one workload later than the one before.
		b=${benches[(round + i) % ${#benches[@]}]}
		pkg=${b%%:*} bench=${b#*:}
		for tree in "${order[@]}"; do
			log "perf-upstream: line $LINE: round $((round + 1))/$count: $tree tree: scheduler_perf -bench '$bench' (log: $log_file)"
			# go test runs a test binary in its package's directory: the
			# workloads' templates are found relative to it. scheduler_perf
			# starts etcd from PATH; ARTIFACTS is where its logs go; its
			# data items and profiles go to the tree's directory, whose
			# names do not say the tree.
			PATH="$BIN:$PATH" ARTIFACTS="$dir" TEST_SRCDIR="$dir/srcdir-$tree" TEST_WORKSPACE=. \
				carry perf-run -dir "${trees[$tree]}/test/integration/scheduler_perf/$pkg" -items "$dir/$tree" \
				-log "$log_file" -results "$result" -key "tree=$tree" -- \
				"$dir/$pkg-$tree.test" -test.timeout 0 -test.run '^$' \
				-test.bench "$bench" -test.benchtime=1x -test.count=1 \
				-perf-scheduling-label-filter= -data-items-dir="$dir/$tree" "${perf_profile[@]}" ||
				die "perf-upstream: $tree tree: scheduler_perf -bench '$bench' failed (log: $log_file)"
		done
	done
done

log "perf-upstream: the fork's tree against plain upstream $(carry upstream) (benchstat -col '/tree@(plain fork)' $result)"
"$TOOLS/benchstat" -col '/tree@(plain fork)' "$result"
log "perf-upstream: the fork's tree against plain, paired by round (carry perf-pairs -key tree -base plain $result)"
carry perf-pairs -key tree -base plain "$result"
log "perf-upstream: results in $dir"
