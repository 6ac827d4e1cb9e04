# baokeeper Makefile. Every tool comes from go.mod (go tool ...) or is built from Go
# modules by hack/build-bins.sh into bin/ (git-ignored). Nothing is downloaded from
# anywhere but the Go module proxy.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# No cgo anywhere: baokeeper needs none, and the test binaries then share compiled
# packages with the kubernetes and etcd builds of hack/build-bins.sh, which are
# static (docs/design/build-cache.md).
export CGO_ENABLED := 0

K8S_VERSION ?= 1.37.2
BIN ?= $(CURDIR)/bin
ENVTEST_ASSETS := $(BIN)/k8s-$(K8S_VERSION)
BAO_BIN ?= $(BIN)/bao-2.4.0
S3_BIN ?= $(BIN)/s3server-7506e5f91cd6
HELM_BIN ?= $(BIN)/helm-v4.3.2
HELM3_BIN ?= $(BIN)/helm-v3.21.4
GO_TEST_FLAGS ?=
# Test data (the etcd of envtest and of the rig, OpenBao's Raft logs, S3 objects) lives
# on tmpfs when the machine has one: the tests need no durability beyond a process
# crash, which tmpfs keeps, and fsync on a busy disk stalls the members long enough to
# cost elections (docs/design/e2e-parallel.md). TEST_TMPDIR= (empty) keeps $$TMPDIR.
TEST_TMPDIR ?= $(shell d=/dev/shm/baokeeper-tmp; mkdir -p $$d 2>/dev/null && [ -w $$d ] && echo $$d)
TEST_ENV := $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))
# The envtest control planes (kube-apiserver, etcd) inherit the test's environment.
# They are CPU-bound in the crash-after-every-pass specs, a quarter of it garbage
# collection: GOGC=400 trades memory (about 1.4 GB at most) for about 20 % of
# envtest's time (docs/design/e2e-parallel.md, "Garbage collection"). TEST_GOGC=
# (empty) keeps Go's default.
TEST_GOGC ?= 400
ENVTEST_ENV := $(TEST_ENV) $(if $(TEST_GOGC),GOGC=$(TEST_GOGC))

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code.
	go tool controller-gen object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: manifests
manifests: ## Generate the CRD and RBAC manifests under config/.
	go tool controller-gen crd rbac:roleName=baokeeper-manager paths="./api/..." paths="./internal/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@# The chart carries copies (helm reads files inside the chart only); test/chart
	@# fails when they differ.
	cp config/crd/bases/openbao.baokeeper.dev_openbaoclusters.yaml charts/baokeeper/files/crds/
	cp config/rbac/role.yaml charts/baokeeper/files/manager-role.yaml
	cp config/grafana/baokeeper-dashboard.json config/prometheus/baokeeper-rules.yaml charts/baokeeper/files/
	cp config/admission/policy.yaml charts/baokeeper/files/admission-policy.yaml
	go run ./hack/tools/nsrole config/rbac/role.yaml config/namespaced/role.yaml config/namespaced/cluster_role.yaml

.PHONY: test-crds
test-crds: ## Regenerate test/chart/crds (ServiceMonitor, PrometheusRule, Certificate, Issuer) from prometheus-operator's and cert-manager's API types.
	cd hack/tools/testcrds && go run sigs.k8s.io/controller-tools/cmd/controller-gen crd:crdVersions=v1 \
		paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 \
		paths=github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1 output:crd:dir=$(CURDIR)/test/chart/crds.all
	mkdir -p test/chart/crds && mv test/chart/crds.all/monitoring.coreos.com_servicemonitors.yaml test/chart/crds.all/monitoring.coreos.com_prometheusrules.yaml \
		test/chart/crds.all/cert-manager.io_certificates.yaml test/chart/crds.all/cert-manager.io_issuers.yaml test/chart/crds/
	rm -rf test/chart/crds.all

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: verify
verify: ## Fail when generated files are stale, gofmt or go vet complain.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -l lists: $$out"; exit 1; fi
	go vet ./...
	$(MAKE) generate manifests
	@git diff --exit-code -- api config charts || { echo "generated files are stale: run make generate manifests and commit"; exit 1; }

# The release version: the chart's appVersion. The image is tagged with it, and
# config/manager and the chart reference it.
VERSION ?= $(shell sed -n 's/^appVersion: "\(.*\)"$$/\1/p' charts/baokeeper/Chart.yaml)
IMAGE_REPO ?= ghcr.io/baokeeper/baokeeper
PLATFORMS ?= linux/amd64,linux/arm64
.PHONY: image
image: ## Build the operator's OCI image (static, non-root, SBOM; amd64 and arm64) into dist/oci, reproducibly.
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
		go run ./hack/image --repository $(IMAGE_REPO) --version $(VERSION) --revision "$$(git rev-parse HEAD 2>/dev/null)" \
		--platforms $(PLATFORMS) --out dist/oci --work-dir dist/build

# The rig runs the operator from the image, for this machine's architecture only:
# the platform's image manifest is the same bytes in the multi-platform index.
.PHONY: image-host
image-host: ## Build the operator's image for this machine's platform into dist/oci (what the rig runs).
	$(MAKE) image PLATFORMS=linux/$$(go env GOARCH)

.PHONY: build
build: ## Build the baokeeper binary into bin/.
	go build -o $(BIN)/baokeeper ./cmd/baokeeper

##@ Test binaries (built from Go modules, cached in bin/ by version)

.PHONY: envtest-bins
envtest-bins: ## Build kube-apiserver and etcd for envtest.
	hack/build-bins.sh envtest

.PHONY: openbao-bins
openbao-bins: ## Build OpenBao 2.4.0 and relinked copies that report other versions.
	hack/build-bins.sh openbao

.PHONY: s3-bins
s3-bins: ## Build the S3-compatible server (SeaweedFS) that receives snapshots in tests.
	hack/build-bins.sh s3

.PHONY: helm-bins
helm-bins: ## Build helm (the chart's lint, template and dry-run checks).
	hack/build-bins.sh helm

.PHONY: rig-bins
rig-bins: ## Build the whole control plane and kubectl.
	hack/build-bins.sh rig

##@ Test

.PHONY: test
test: verify rig-bins openbao-bins s3-bins helm-bins ## Unit, fuzz seeds, envtest, real-OpenBao, real-S3, rig control-plane and chart tests.
	@echo "== go test (unit, fuzz seed corpora, envtest, real OpenBao, the chart) =="
	$(ENVTEST_ENV) KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) BAO_BIN=$(BAO_BIN) S3_BIN=$(S3_BIN) HELM_BIN=$(HELM_BIN) HELM3_BIN=$(HELM3_BIN) BAOKEEPER_REQUIRE_INTEGRATION=1 \
		go test $(GO_TEST_FLAGS) -count=1 -timeout 30m ./...
	@echo "== the e2e observer's checks, without a rig (each shown failing on a record that breaks it) =="
	$(TEST_ENV) go test $(GO_TEST_FLAGS) -count=1 -tags e2e -run 'TestObserver' ./test/e2e/

# After kubernetes' build: the rig compiles many of the same packages, from its cache.
.PHONY: rig-cmd
rig-cmd: rig-bins ## Build the rig's command into bin/.
	go build -o $(BIN)/rig ./test/rig/cmd/rig

.PHONY: rig-build
rig-build: rig-cmd ## Build the rig, the operator and the e2e test binary into bin/.
	go build -o $(BIN)/baokeeper ./cmd/baokeeper
	go build -o $(BIN)/kubectl-bao ./cmd/kubectl-bao
	go test -c -tags e2e -o $(BIN)/e2e.test ./test/e2e
	go build -o $(BIN)/ginkgo github.com/onsi/ginkgo/v2/ginkgo

# E2E_FLAGS passes extra Ginkgo CLI flags, for example E2E_FLAGS=--focus=rolling.
# E2E_PROCS Ginkgo processes share one rig, each Describe on a cluster and namespace
# of its own (docs/design/e2e-parallel.md). The benchmarks (labels bench and scale)
# are left to make bench-upgrade and make bench-scale, which run alone.
E2E_PROCS ?= 2
.PHONY: test-e2e
test-e2e: rig-bins openbao-bins s3-bins helm-bins rig-build image-host ## End-to-end specs on the local rig (needs root).
	@echo "== e2e on the local rig (inside a private network namespace), $(E2E_PROCS) Ginkgo processes =="
	ns=baokeeper-e2e-$$$$; code=0; \
		$(TEST_ENV) HELM_BIN=$(HELM_BIN) $(BIN)/rig netns-run --name $$ns -- $(BIN)/ginkgo --procs=$(E2E_PROCS) -v --timeout=60m --output-interceptor-mode=none \
			--label-filter='!bench && !scale' $(E2E_FLAGS) $(BIN)/e2e.test || code=$$?; \
		hack/check-rig-clean.sh $$ns || code=1; exit $$code

# BENCH_FLAGS passes extra flags to the suite, for example BENCH_FLAGS=-ginkgo.focus='on 3 members';
# BENCH_RUNS=1 makes one run per leader position instead of three.
# The benchmark moves each cluster up a chain of patch versions, one per run: relinked
# copies of OpenBao 2.4.0 that report 2.4.2 to 2.4.9 (about 20 s each, once).
BENCH_BAO_VERSIONS := 2.4.2 2.4.3 2.4.4 2.4.5 2.4.6 2.4.7 2.4.8 2.4.9
.PHONY: bench-bins
bench-bins: openbao-bins ## Relink the benchmarks' OpenBao version chain.
	BAO_FAKE_VERSIONS="$(BENCH_BAO_VERSIONS)" hack/build-bins.sh openbao

.PHONY: bench-upgrade
bench-upgrade: rig-bins bench-bins s3-bins rig-build image-host ## Upgrade benchmark on the local rig: baokeeper against two baselines, 3 and 5 members, the leader at every position (needs root; about an hour).
	@echo "== upgrade benchmark on the local rig (inside a private network namespace) =="
	ns=baokeeper-bench-$$$$; code=0; \
		$(TEST_ENV) BENCH_RUNS=$(BENCH_RUNS) $(BIN)/rig netns-run --name $$ns -- $(BIN)/e2e.test -test.v -test.timeout 180m -ginkgo.timeout 170m -ginkgo.v -ginkgo.label-filter=bench $(BENCH_FLAGS) || code=$$?; \
		hack/check-rig-clean.sh $$ns || code=1; exit $$code

# BENCH_SCALE_CLUSTERS and BENCH_SCALE_IDLE shrink the idle-cost run for a quick try,
# BENCH_CONCURRENT sets how many clusters upgrade at once on the rig (default 4).
.PHONY: bench-scale
bench-scale: envtest-bins rig-bins bench-bins s3-bins rig-build image-host ## Idle cost over 200 clusters (envtest, simulated members), then concurrent upgrades on the rig (needs root; about 25 min).
	@echo "== idle cost and start-up over many clusters (envtest, simulated members) =="
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) BAOKEEPER_REQUIRE_INTEGRATION=1 \
		go test -tags scale -count=1 -timeout 60m ./test/scale -v -args -ginkgo.v
	@echo "== concurrent upgrades on the local rig (inside a private network namespace) =="
	ns=baokeeper-scale-$$$$; code=0; \
		$(TEST_ENV) BENCH_CONCURRENT=$(BENCH_CONCURRENT) $(BIN)/rig netns-run --name $$ns -- $(BIN)/e2e.test -test.v -test.timeout 60m -ginkgo.timeout 55m -ginkgo.v -ginkgo.label-filter=scale || code=$$?; \
		hack/check-rig-clean.sh $$ns || code=1; exit $$code

# What the demo runs, and nothing else: the control plane and kubectl, OpenBao 2.4.0
# and the 2.4.1 it upgrades to, the S3 server, the rig and the operator's image (not
# the e2e binary, kubectl-bao, helm or the other OpenBao copies). One build at a
# time: four at once on 2 cores had finished none of them after 29 minutes on a
# fresh machine (docs/benchmarks.md, "First start").
.PHONY: demo-bins
demo-bins: rig-cmd demo-openbao-bins s3-bins image-host ## Build what make demo needs.

.PHONY: demo-openbao-bins
demo-openbao-bins:
	BAO_FAKE_VERSIONS=2.4.1 hack/build-bins.sh openbao

.PHONY: demo
demo: demo-bins ## Boot the rig, install baokeeper, create a cluster, write and read data.
	$(BIN)/rig netns-run --name baokeeper-demo --forward 127.0.0.1:16443 -- hack/demo.sh

.PHONY: test-unit
test-unit: ## Unit tests only (no binaries needed).
	go test -count=1 ./...

.PHONY: fuzz
fuzz: ## Run each fuzz target for a short while.
	go test -run='^$$' -fuzz=FuzzParseVersion -fuzztime=30s ./internal/service/upgrade/
	go test -run='^$$' -fuzz=FuzzEvaluateVersion -fuzztime=30s ./internal/service/upgrade/
	go test -run='^$$' -fuzz=FuzzParseImage -fuzztime=30s ./internal/service/upgrade/
	go test -run='^$$' -fuzz=FuzzPendingRequests -fuzztime=30s ./internal/service/upgrade/
	go test -run='^$$' -fuzz=FuzzMailbox -fuzztime=30s ./internal/service/executorjob/

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
