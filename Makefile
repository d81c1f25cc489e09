# Cloudprofiler in Go: see README.md.
SHELL   := /bin/bash
.SHELLFLAGS := -o pipefail -c
GO      ?= go
BIN     ?= bin
GOFLAGS ?=
export BIN

.PHONY: all deps build test lint bench demo demo-pair fuzz clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(GO) build $(GOFLAGS) -o $(BIN)/ ./cmd/...

# Unit, race, fuzz-seed and integration tests (the integration tests build
# and start the real binaries on loopback).
test: deps
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) test -race -count=1 ./objfactory/ ./receiver/ ./sender/ ./internal/histo/ ./internal/zmqraw/ ./profiler/ ./tsc/...
	$(GO) test -count=1 ./...

lint: deps
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest
	$$($(GO) env GOPATH)/bin/staticcheck ./...

# Micro-benchmarks, then the end-to-end figures recorded in BENCHMARKS.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./objfactory/ ./scenarios/ ./sender/ ./internal/histo/ ./tsc/ ./profiler/
	CP_RAW_CEILING=124,10024 $(GO) test -count=1 -run '^TestRawCeiling$$' -v ./internal/zmqraw/ | grep -E 'RAW|^(ok|FAIL)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBench' -v -timeout 30m ./internal/e2e/ | grep -E 'EMISSION|E2E|ACCURACY|SWEEP|CAPACITY|OVERHEAD|^(ok|FAIL|---)'

# The main job on loopback: cpsweep starts local dgsend/dgrecv agents and
# finds the maximum sustainable throughput (~1 min), writing results/.
demo: build
	$(BIN)/cpsweep --duration 2s --warmup 500ms --start 500k --bucket 100 --name demo

# A short dgsend -> dgrecv run on loopback with a summary of both sides.
demo-pair: build
	scripts/demo.sh

fuzz: deps
	$(GO) test -run '^$$' -fuzz FuzzBucketDecode -fuzztime 60s ./objfactory/
	$(GO) test -run '^$$' -fuzz FuzzFastPathsAgree -fuzztime 60s ./scenarios/
	$(GO) test -run '^$$' -fuzz FuzzDecodePacket -fuzztime 60s ./tsc/
	$(GO) test -run '^$$' -fuzz FuzzBlockReader -fuzztime 60s ./profiler/
	$(GO) test -run '^$$' -fuzz FuzzDecodeAck -fuzztime 30s ./profiler/

clean:
	rm -rf $(BIN)
