# kube-carry: a fork of Kubernetes kept as a patch series on a pinned upstream.
# The Makefile only wires the scripts in scripts/; `make help` lists targets.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := all

# The harness runs go on the patched tree with the same flags as the build,
# so the build cache is shared (DESIGN.md, build cache).
export GOFLAGS := -trimpath -buildvcs=false
export CGO_ENABLED := 0

TEST_TIMEOUT ?= 60m
VERSIONS ?= v1.34.4 v1.35.4 v1.36.4 v1.37.1

.PHONY: all
all: build etcd ## fetch the pinned upstream, apply the series, build kube-scheduler and kubelet (and etcd for the tests) into _output/bin

.PHONY: fetch
fetch: ## assemble the pinned upstream into _output/src/kubernetes (Go module proxy, checked against UPSTREAM)
	scripts/fetch.sh

.PHONY: apply
apply: fetch ## apply patches/series to the tree (idempotent; never overwrites local work)
	scripts/apply.sh

.PHONY: build
build: apply ## build the patched binaries into _output/bin with SHA256SUMS
	scripts/build.sh

.PHONY: etcd
etcd: fetch ## build the etcd the integration tests use into _output/bin/etcd (version from upstream's hack/lib/etcd.sh)
	scripts/etcd.sh

.PHONY: test
test: build etcd ## lint the series and prove every patch (tests, upstream suites, regression proofs)
	go test -count=1 ./cmd/... ./internal/...
	go test -count=1 -timeout $(TEST_TIMEOUT) ./tests/... -v -run '$(RUN)'

.PHONY: test-patch
test-patch: apply ## run one patch's checks: make test-patch P=<name>.patch
	@[[ -n "$(P)" ]] || { echo "usage: make test-patch P=<patch file name>" >&2; exit 2; }
	go test -count=1 -timeout $(TEST_TIMEOUT) ./tests/... -v -run 'TestSeries/(lint|$(basename $(P)))$$'

.PHONY: export
export: ## regenerate patches/ from the commits of the patched tree
	scripts/export.sh

.PHONY: matrix
matrix: ## apply-only check of the series on each of VERSIONS: patch × version table, also in _output/matrix.md
	scripts/matrix.sh $(VERSIONS)

.PHONY: rebase
rebase: ## move the series to another release: make rebase TO=vA.B.C (stops on a conflict)
	@[[ -n "$(TO)" ]] || { echo "usage: make rebase TO=vA.B.C" >&2; exit 2; }
	scripts/rebase.sh start $(TO)

.PHONY: rebase-continue
rebase-continue: ## go on with a rebase after resolving its conflict
	scripts/rebase.sh continue

.PHONY: rebase-abort
rebase-abort: ## throw a rebase away; pin, series and tree stay as they were
	scripts/rebase.sh abort

.PHONY: pin
pin: ## recompute UPSTREAM for a release: make pin VERSION=vX.Y.Z
	@[[ -n "$(VERSION)" ]] || { echo "usage: make pin VERSION=vX.Y.Z" >&2; exit 2; }
	scripts/pin.sh $(VERSION)

.PHONY: clean-tree
clean-tree: ## remove the patched tree (refuses when it holds unexported work)
	scripts/clean.sh tree

.PHONY: clean
clean: ## remove _output (refuses when the patched tree holds unexported work)
	scripts/clean.sh all

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'

.PHONY: lint
lint: ## developer checks: shellcheck of the scripts, gofmt and go vet of the Go code
	shellcheck -x scripts/*.sh ci/run ci/install-tools .ci/run
	@out=$$(gofmt -l cmd internal tests); if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./cmd/... ./internal/... ./tests/...

.PHONY: bench
bench: build etcd ## scheduler throughput, 500 nodes and 5000 pods: the fork vs a plain WaitForFirstConsumer class vs CSIStorageCapacity
	scripts/bench.sh

.PHONY: bench-full
bench-full: build etcd ## the throughput benchmark with 1000 nodes
	BENCH_NODES=1000 scripts/bench.sh

.PHONY: soak
soak: build etcd ## the S2 stress scenario with SOAK_N iterations (default 100) against a real apiserver and etcd
	scripts/soak.sh
