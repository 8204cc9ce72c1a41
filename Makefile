# kube-carry: a fork of Kubernetes kept as patch series on pinned upstream
# releases, one release line per upstream minor (patches/vA.B/).
# The Makefile only wires the scripts in scripts/; `make help` lists targets.
# Every target works on one line: LINE=vA.B, by default the newest.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := all

# The go settings of the builds and the programs they build are
# internal/build's (the scripts read them with `carry build-env`).

LINE ?=
export LINE
TEST_TIMEOUT ?= 60m
export TEST_TIMEOUT
# RUN, PERF_BENCH and PERF_UPSTREAM_BENCH are regular expressions. Given on
# make's command line, make would expand an anchor followed by a character
# (`$ `, `$|`) as a variable and drop it: make perf PERF_BENCH='a$ b$' ran
# one pattern, `ab$`. They reach the scripts as written.
override RUN := $(value RUN)
override PERF_BENCH := $(value PERF_BENCH)
override PERF_UPSTREAM_BENCH := $(value PERF_UPSTREAM_BENCH)
export RUN PERF_BENCH PERF_UPSTREAM_BENCH
export NODES SCHEDULER KUBELET UPSTREAM_BINARIES E2E_SCENARIO

.PHONY: all
all: build etcd ## fetch the line's pinned upstream, apply its series, build kube-scheduler and kubelet (and etcd for the tests) into _output/<line>/bin

.PHONY: release
release: build ## what operators deploy, in _output/<line>/release: amd64+arm64 binaries, multi-arch kube-scheduler OCI image (REGISTRY=), SBOMs, release notes, SHA256SUMS
	scripts/release.sh

.PHONY: push
push: ## push the line's kube-scheduler image from make release to its registry (or REGISTRY=)
	scripts/push.sh

.PHONY: lines
lines: ## every line: pinned release, newest release the module proxy serves, revision, patches, end of life
	scripts/lines.sh

.PHONY: fetch
fetch: ## assemble the line's pinned upstream into _output/<line>/src/kubernetes (Go module proxy, checked against the pin)
	scripts/fetch.sh

.PHONY: apply
apply: fetch ## apply the line's series to its tree (idempotent; never overwrites local work)
	scripts/apply.sh

.PHONY: build
build: apply ## build the line's patched binaries into _output/<line>/bin with SHA256SUMS
	scripts/build.sh

.PHONY: etcd
etcd: fetch ## build the etcd the line's integration tests use into _output/<line>/bin/etcd (version from upstream's hack/lib/etcd.sh)
	scripts/etcd.sh

.PHONY: gomod
gomod: ## for out-of-tree scheduler plugins: print the go.mod replace block that points a module at the line's patched tree, or with GOMOD_DIR=<module dir> write its go.work
	@scripts/gomod.sh $(GOMOD_DIR)

.PHONY: tools
tools: ## install what make test and make cluster need beyond Go and git from Debian's packages (shellcheck, skopeo, containerd, runc, CNI plugins, iptables, iproute2, procps, gcc, libc6-dev); says what it installs
	scripts/tools.sh

.PHONY: test
test: tools lint ## prove lines: without LINE, the full proof of the newest line and the line proof of the other supported lines; with LINE, the full proof of that line
	scripts/test.sh

.PHONY: test-patch
test-patch: apply etcd ## run one patch's checks on the line: make test-patch P=<name>.patch
	scripts/test-patch.sh

.PHONY: export
export: ## regenerate the line's patches and series from the commits of its patched tree
	scripts/export.sh

.PHONY: matrix
matrix: ## apply-only check of the line's series on each of VERSIONS: patch × version table, also in _output/matrix.md and .json
	@[[ -n "$(VERSIONS)" ]] || { echo "usage: make matrix VERSIONS='vA.B.C ...' [LINE=vA.B]" >&2; exit 2; }
	scripts/matrix.sh $(VERSIONS)

.PHONY: matrix-newest
matrix-newest: ## the matrix of the line's series on the newest releases the proxy serves (each supported minor's and any newer minor's): what the weekly CI job runs
	scripts/matrix.sh -newest

.PHONY: rebase
rebase: ## move the line's series to another release: make rebase TO=vA.B.C (another minor starts that line); stops on a conflict
	@[[ -n "$(TO)" ]] || { echo "usage: make rebase TO=vA.B.C [LINE=vA.B]" >&2; exit 2; }
	scripts/rebase.sh start $(TO)

.PHONY: rebase-continue
rebase-continue: ## go on with a rebase or bump after resolving its conflict
	scripts/rebase.sh continue

.PHONY: rebase-abort
rebase-abort: ## throw a rebase or bump away; the line and its tree stay as they were
	scripts/rebase.sh abort

.PHONY: bump
bump: ## move the line to the newest patch release of its minor that the proxy serves (replays the series, drafts CHANGELOG)
	scripts/bump.sh start

.PHONY: bump-continue
bump-continue: ## go on with a bump after resolving its conflict
	scripts/bump.sh continue

.PHONY: bump-abort
bump-abort: ## throw a bump away
	scripts/bump.sh abort

.PHONY: port
port: ## carry patches to another line: make port P='<patch>...' FROM=vA.B TO=vC.D [SINCE=<commit>: only their change since]; stops on a conflict
	@[[ -n "$(P)" && -n "$(FROM)" && -n "$(TO)" ]] || { echo "usage: make port P='<patch>.patch ...' FROM=vA.B TO=vC.D [SINCE=<commit>]" >&2; exit 2; }
	scripts/port.sh start $(FROM) $(TO) $(P)

.PHONY: port-continue
port-continue: ## go on with a port after resolving its conflict: make port-continue TO=vC.D (or LINE=vC.D)
	@[[ -n "$(or $(TO),$(LINE))" ]] || { echo "usage: make port-continue TO=vC.D" >&2; exit 2; }
	scripts/port.sh continue $(or $(TO),$(LINE))

.PHONY: port-abort
port-abort: ## throw a port away: make port-abort TO=vC.D (or LINE=vC.D)
	@[[ -n "$(or $(TO),$(LINE))" ]] || { echo "usage: make port-abort TO=vC.D" >&2; exit 2; }
	scripts/port.sh abort $(or $(TO),$(LINE))

.PHONY: pin
pin: ## (re)compute the pin of a release, patches/vA.B/UPSTREAM: make pin VERSION=vA.B.C (a new minor starts an empty line)
	@[[ -n "$(VERSION)" ]] || { echo "usage: make pin VERSION=vX.Y.Z" >&2; exit 2; }
	scripts/pin.sh $(VERSION)

.PHONY: clean-tree
clean-tree: ## remove the line's patched tree (refuses when it holds unexported work)
	scripts/clean.sh tree

.PHONY: clean
clean: ## remove _output/<line> (refuses when the line's patched tree holds unexported work)
	scripts/clean.sh all

.PHONY: cluster-binaries
cluster-binaries: build ## what make cluster runs besides the release: kube-apiserver, kube-controller-manager, kubectl, agnhost of the line, and plain upstream kube-scheduler and kubelet (_output/<line>/upstream/bin)
	scripts/cluster-binaries.sh

.PHONY: cluster
cluster: tools build etcd cluster-binaries ## start the line as a cluster on this machine (root): control plane + NODES=2 nodes with their own containerd; SCHEDULER=, KUBELET=, UPSTREAM_BINARIES=1 swap binaries
	scripts/cluster-up.sh

.PHONY: e2e
e2e: tools build etcd cluster-binaries ## the field's scenarios on the line's cluster, fork vs plain upstream of the same release, one table (root; E2E_SCENARIO= picks one)
	scripts/e2e.sh

.PHONY: e2e-upgrade
e2e-upgrade: tools ## walk the upgrade path on a real cluster: oldest supported line to the newest one minor at a time with local-dynamic volumes in place, then roll back one line; one table (root; builds every supported line's cluster binaries)
	scripts/e2e-upgrade.sh

.PHONY: cluster-down
cluster-down: ## stop the cluster and remove every process, mount, network namespace and cgroup it made
	scripts/cluster-down.sh

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'

.PHONY: lint
lint: tools ## developer checks, in seconds and before any fetch: every line's folder (series = folder, trailers, mutants named by guards), shellcheck of the scripts, gofmt and go vet of the Go code (gofmt only of examples/, which build against a patched tree)
	scripts/lint.sh

.PHONY: bench
bench: build etcd ## scheduler throughput on the line, 500 nodes and 5000 pods: the fork vs a plain WaitForFirstConsumer class vs CSIStorageCapacity
	scripts/bench.sh

.PHONY: bench-full
bench-full: build etcd ## the throughput benchmark with 1000 nodes
	BENCH_NODES=1000 scripts/bench.sh

.PHONY: perf
perf: apply etcd ## scheduler_perf at 1000 nodes (PERF_NODES=5000): WaitForFirstConsumer plain vs local-dynamic vs CSIStorageCapacity (5 runs each, taking turns), benchstat, peak RSS
	scripts/perf.sh

.PHONY: perf-upstream
perf-upstream: apply etcd ## upstream's scheduler_perf threshold workloads at 5000 nodes (CSIPVs, InTreePVs, MigratedInTreePVs, WithMixedChurn): the fork's tree vs plain upstream, taking turns (5 runs each), benchstat, peak RSS
	scripts/perf-upstream.sh

.PHONY: soak
soak: build etcd ## the S2 stress scenario with SOAK_N iterations (default 100) against a real apiserver and etcd
	scripts/soak.sh
