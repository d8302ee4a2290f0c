# heddle's build. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
LAMBDAS := api worker janitor
FUZZTIME ?= 30s
# VERSION names the build in heddle version, /v1/status and the Lambdas'
# start-up lines (package buildinfo) even where the toolchain records no VCS
# revision (GOFLAGS=-buildvcs=false, a worktree): git's description of HEAD.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
LDVERSION = $(if $(VERSION),-X github.com/heddle-io/heddle/internal/buildinfo.version=$(VERSION))
# The long run of the operations model (make opsmodel-long).
OPSMODEL_CHECKS ?= 100
OPSMODEL_STEPS ?= 100
OPSMODEL_KILL_CHECKS ?= 20
# GOLAMBDA builds a Lambda's bootstrap binary: linux/arm64, no RPC runtime.
GOLAMBDA = CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w $(LDVERSION)"

.PHONY: help build run demo demo-static test test-unit lint bench fuzz opsmodel-long opsmodel-kill lambda clean local-aws local-aws-build chaos

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build the heddle CLI into bin/
	$(GO) build -ldflags "$(LDVERSION)" -o bin/heddle ./cmd/heddle

demo: ## heddle's main job end to end on this machine: a cluster created, used, expanded and deleted (the quick start's first command)
	./scripts/demo.sh

demo-static: ## The demo catalog on a static pool of existing hosts (the OpenSSH servers of scripts/sshd-hosts.sh): imported, used, expanded, deleted and wiped
	./scripts/demo-static.sh

run: ## Run heddle locally on the embedded store (the quick start's first command)
	$(GO) run ./cmd/heddle server

test: ## The whole test suite, with DynamoDB Local and OpenSSH servers started for it
	./scripts/test-all.sh

chaos: ## The long nemesis run on the local AWS topology (tens of minutes; outside CI): faults in DynamoDB, SQS and SSH, kill -9, checked invariants
	./scripts/chaos.sh

test-unit: ## Only the tests that need no emulator or sshd (fast)
	$(GO) test -race -count=1 $(PKGS)

lint: ## gofmt, go vet, and no tracked binary or unlisted file over 1 MiB
	./scripts/check-tracked-files.sh
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

bench: ## Benchmarks of every package (store backends use DynamoDB Local when it runs)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

fuzz: ## Run every fuzz target for FUZZTIME each (outside CI)
	./scripts/fuzz-all.sh $(FUZZTIME)

opsmodel-long: ## The model-based operations test on a long budget, OPSMODEL_CHECKS sequences of about OPSMODEL_STEPS steps (outside CI)
	HEDDLE_OPSMODEL_CHECKS=$(OPSMODEL_CHECKS) HEDDLE_OPSMODEL_STEPS=$(OPSMODEL_STEPS) $(GO) test -count=1 -timeout 0 -v -run TestOperationsModel ./internal/opsmodel/

opsmodel-kill: ## The operations model with each check's server a child process that server restarts kill -9 (outside CI), OPSMODEL_KILL_CHECKS sequences of about OPSMODEL_STEPS steps
	HEDDLE_OPSMODEL_KILL=1 HEDDLE_OPSMODEL_CHECKS=$(OPSMODEL_KILL_CHECKS) HEDDLE_OPSMODEL_STEPS=$(OPSMODEL_STEPS) $(GO) test -count=1 -timeout 0 -v -run TestOperationsModel ./internal/opsmodel/

lambda: ## Build the Lambda bootstrap binaries and zips (linux/arm64) into dist/
	@mkdir -p dist
	@for fn in $(LAMBDAS); do \
		if [ ! -f functions/$$fn/main.go ]; then echo "skip $$fn (not written yet)"; continue; fi; \
		mkdir -p dist/$$fn && \
		$(GOLAMBDA) -o dist/$$fn/bootstrap ./functions/$$fn && \
		(cd dist/$$fn && rm -f ../$$fn.zip && zip -q -X ../$$fn.zip bootstrap) && \
		printf "%-8s bootstrap %6s KiB  zip %6s KiB\n" $$fn $$(( $$(stat -c %s dist/$$fn/bootstrap) / 1024 )) $$(( $$(stat -c %s dist/$$fn.zip) / 1024 )); \
	done

clean: ## Remove build output
	rm -rf bin dist .local-aws

# `sam build` runs these (BuildMethod: makefile): each copies one function's
# bootstrap into the artifacts directory SAM gives. They spell out
# $(GOLAMBDA)'s flags: infra/samtemplate_test.go reads them from here.
build-ApiFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w $(LDVERSION)" -o $(ARTIFACTS_DIR)/bootstrap ./functions/api

build-WorkerFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w $(LDVERSION)" -o $(ARTIFACTS_DIR)/bootstrap ./functions/worker

build-JanitorFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w $(LDVERSION)" -o $(ARTIFACTS_DIR)/bootstrap ./functions/janitor

# GOLOCAL builds a Lambda's bootstrap for this host: $(GOLAMBDA)'s flags
# with the host's GOOS/GOARCH, for make local-aws.
GOLOCAL = CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w $(LDVERSION)"


local-aws-build: ## Build the Lambda bootstraps for this host into dist/local, the CLI and heddle-local-aws into bin/
	@for fn in $(LAMBDAS); do mkdir -p dist/local/$$fn && $(GOLOCAL) -o dist/local/$$fn/bootstrap ./functions/$$fn || exit 1; done
	$(GO) build -o bin/heddle ./cmd/heddle
	$(GO) build -o bin/heddle-local-aws ./cmd/heddle-local-aws

local-aws: local-aws-build ## The AWS deployment on this machine, process for process (no Docker, no AWS account); see the README
	./scripts/local-aws.sh
