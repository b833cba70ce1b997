# weft — build, test, benchmark. `make test` is what CI runs (.ci/run).
GO       ?= go
FUZZTIME ?= 15s
CRASH_KILLS ?= 1000

.PHONY: all build test tools lint licenses cross man release-snapshot fuzz bench sim crash big rewrite clean

all: build

# The version, commit and commit date stamped into every binary built here
# (weft version). A release build (goreleaser) sets the same variables.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell git log -1 --format=%cI 2>/dev/null || echo unknown)
MODIFIED ?= $(shell if ! git rev-parse HEAD >/dev/null 2>&1; then echo; elif [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo true; else echo false; fi)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE) -X main.modified=$(MODIFIED)

# build: bin/weft (OUT=path to put it elsewhere).
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(or $(OUT),bin/weft) ./cmd/weft

# test: formatting, vet, then every test with the race detector. Fuzz
# targets' seed corpora run here as ordinary tests. S1 at issue 6's size
# runs in a second, race-free go test (simulation/sim_test.go, TestS1Small),
# and so do the allocation bounds that lean on sync.Pool, which the race
# detector makes drop items at random (node/seal).
test: lint tools
	WEFT_VERSITYGW=$(VERSITYGW_BIN) $(GO) test -race -timeout 30m ./...
	$(GO) test -timeout 15m -run '^TestS1Small$$' ./simulation/
	$(GO) test -timeout 5m -run 'AllocationsBounded$$' ./node/seal/

# tools: programs the tests run, pinned and installed from the module
# proxy into bin/tools: versitygw, the S3 server the object storage tests
# (store/s3store, cmd/weft TestRelayChunksInS3) start on 127.0.0.1 with a
# POSIX backend in a temporary directory (internal/s3test).
VERSITYGW_VERSION ?= v1.8.0
VERSITYGW_BIN := $(CURDIR)/bin/tools/versitygw-$(VERSITYGW_VERSION)/versitygw
tools:
	@test -x $(VERSITYGW_BIN) || \
		GOBIN=$(dir $(VERSITYGW_BIN)) GOOS= GOARCH= $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

# lint: gofmt, go vet, staticcheck (pinned; go run fetches it from the
# module proxy), go mod tidy leaving go.mod and go.sum as they are (a diff
# fails the run), and the licence of every dependency (licenses).
lint: licenses
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	@$(GO) mod tidy -diff || { echo "go mod tidy would change go.mod or go.sum (diff above)"; exit 1; }

# licenses: every package weft and its tests import, on each OS weft is
# built for, carries a licence from LICENSES_ALLOWED (see
# docs/dependencies.md, "Licence"). go-licenses is pinned and installed from
# the module proxy into bin/tools, built for this machine, so that GOOS can
# then choose which OS's imports it reads. go-base36 is ignored because its
# LICENSE.md (Apache-2.0 OR MIT, read by hand at v0.2.0) is not a text the
# classifier recognises; an upgrade of it must be read again.
GO_LICENSES      ?= github.com/google/go-licenses@v1.6.0
LICENSES_ALLOWED ?= Apache-2.0,MIT,BSD-2-Clause,BSD-3-Clause,ISC,MPL-2.0,Unlicense
LICENSES_IGNORE  ?= --ignore github.com/multiformats/go-base36
licenses:
	@GOBIN=$(CURDIR)/bin/tools GOOS= GOARCH= $(GO) install $(GO_LICENSES)
	@set -e; for os in linux darwin windows; do \
		if [ $$os = linux ]; then pkgs="--include_tests ./..."; else pkgs="./cmd/weft"; fi; \
		log=$$(mktemp); \
		if ! GOOS=$$os bin/tools/go-licenses check $(LICENSES_IGNORE) --allowed_licenses $(LICENSES_ALLOWED) $$pkgs >$$log 2>&1; then \
			grep -v '^W[0-9]' $$log | grep -v '^/' ; rm -f $$log; \
			echo "licence check failed for GOOS=$$os (allowed: $(LICENSES_ALLOWED))"; exit 1; \
		fi; \
		rm -f $$log; echo "licences ok for GOOS=$$os"; \
	done

# cross: weft for every OS and CPU it is released for, without cgo (so
# the binaries are static and need nothing installed), into bin/cross/.
# Only ./cmd/weft is linked; every other package it does not import
# (simulation, internal test helpers) is type-checked for each OS, and go
# vet checks every package with its tests for darwin and windows.
CROSS_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
cross:
	@set -e; for t in $(CROSS_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "== $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/cross/weft-$$os-$$arch$$ext ./cmd/weft; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build ./...; \
	done
	@# The tests too: go vet type-checks every _test.go for each OS, so a
	@# Unix-only call in a test shared by every OS fails here, not on a
	@# Windows machine later (Linux-only tests carry //go:build linux).
	@set -e; for os in darwin windows; do \
		echo "== go vet, GOOS=$$os"; \
		CGO_ENABLED=0 GOOS=$$os $(GO) vet ./...; \
	done

# man: man pages (bin/man/*.1) and shell completions (bin/completions:
# weft.bash, _weft, weft.fish, weft.ps1), generated from the cobra
# commands by the hidden `weft gendocs`; the release archives carry them.
# The pages are dated by the commit, not by the build.
man: build
	rm -rf bin/man bin/completions
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) $(or $(OUT),bin/weft) gendocs --man bin/man --completions bin/completions

# release-snapshot: the release archives and checksums.txt in dist/, built
# by goreleaser (pinned, installed from the module proxy into bin/tools)
# from this checkout, with nothing published. SNAPSHOT_TARGET=linux/amd64
# builds one target only (what CI runs): `goreleaser release` has no
# --single-target, so the build's goos/goarch lines of .goreleaser.yaml are
# narrowed in a copy, bin/goreleaser-single.yaml.
# goreleaser drops all git information (commit "none") when the checkout
# has no remote, as a fresh `git init` or a CI copy may not; there the
# module's repository is given as origin for the run, through git's
# environment, without touching the checkout's config.
# cyclonedx-gomod writes each binary's SBOM (CycloneDX JSON, from the
# module list the Go linker embeds); goreleaser runs it from PATH, so
# bin/tools goes first on PATH for the run.
GORELEASER ?= github.com/goreleaser/goreleaser/v2@v2.15.1
CYCLONEDX_GOMOD ?= github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
SNAPSHOT_TARGET ?=
release-snapshot: export GIT_CONFIG_COUNT = $(if $(shell git remote 2>/dev/null),0,1)
release-snapshot: export GIT_CONFIG_KEY_0 = remote.origin.url
release-snapshot: export GIT_CONFIG_VALUE_0 = https://github.com/weftsync/weft
release-snapshot: export PATH := $(CURDIR)/bin/tools:$(PATH)
release-snapshot:
	@GOBIN=$(CURDIR)/bin/tools GOOS= GOARCH= $(GO) install $(GORELEASER)
	@GOBIN=$(CURDIR)/bin/tools GOOS= GOARCH= $(GO) install $(CYCLONEDX_GOMOD)
ifeq ($(SNAPSHOT_TARGET),)
	bin/tools/goreleaser release --snapshot --clean
else
	@mkdir -p bin
	sed -e 's|^    goos: \[.*\]$$|    goos: [$(firstword $(subst /, ,$(SNAPSHOT_TARGET)))]|' \
	    -e 's|^    goarch: \[.*\]$$|    goarch: [$(lastword $(subst /, ,$(SNAPSHOT_TARGET)))]|' .goreleaser.yaml > bin/goreleaser-single.yaml
	@grep -q '^    goos: \[$(firstword $(subst /, ,$(SNAPSHOT_TARGET)))\]$$' bin/goreleaser-single.yaml || { echo "could not narrow .goreleaser.yaml to $(SNAPSHOT_TARGET)"; exit 1; }
	bin/tools/goreleaser release --snapshot --clean --config bin/goreleaser-single.yaml
endif

# fuzz: every Fuzz target in the tree for FUZZTIME each.
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		dir=$$(dirname $$f); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
			echo "== $$dir $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

# bench: the B-scenarios on real processes (SCALE=smoke|full, B=B1,B3 to
# pick), then the in-process benchmarks of the protocol core and the store.
bench: build
	bin/weft bench --scale $(or $(SCALE),smoke) $(if $(B),--only $(B))
	$(GO) test -run '^$$' -bench . -benchmem ./protocol/... ./store/... ./node/folder/

# sim: the simulation over many seeds (SEEDS=N, SCENARIO=S1..S5, DEVICES=N).
SEEDS ?= 20
sim:
	WEFT_SIM=1 $(GO) test -count=1 -timeout 30m -run 'TestS1' -v ./simulation/
	for s in $$(seq 1 $(SEEDS)); do SIM_SCENARIO=$${SCENARIO:-S1} SIM_SEED=$$s SIM_DEVICES=$${DEVICES:-10} $(GO) test -count=1 -timeout 30m -run TestScenarioFromEnv ./simulation/ || exit 1; done

# big: the tests of files too large for make test (WEFT_BIG=1): a 9 GiB
# file synced end to end through its chunk-list pieces (minutes, and 19 GiB
# of disk; docs/benchmarks.md, "Files of any size").
big:
	WEFT_BIG=1 $(GO) test -count=1 -timeout 60m -run 'TestNineGiBFileSyncs' -v ./node/

# crash: the store's SIGKILL crash test at full length.
crash:
	WEFT_CRASH_KILLS=$(CRASH_KILLS) $(GO) test -count=1 -run '^TestCrash$$' -timeout 60m -v ./store/...

# rewrite: regenerate golden files after an intended format change. Only
# the packages whose tests define the -update flag are run (go test fails a
# package that does not know a flag it is given); they are found, not
# listed, so a new golden test joins by defining the flag.
rewrite:
	@pkgs=$$(grep -rl --include='*_test.go' 'flag.Bool("update"' . | xargs -n1 dirname | sort -u); \
	echo "rewriting golden files in:" $$pkgs; \
	$(GO) test -count=1 -run 'Golden' $$pkgs -args -update

clean:
	rm -rf bin dist
