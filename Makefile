# Cloudprofiler in Go: see README.md.
SHELL   := /bin/bash
.SHELLFLAGS := -o pipefail -c
GO      ?= go
BIN     ?= bin
GOFLAGS ?=
export BIN

.PHONY: all deps build cref test unit e2e lint bench demo demo-broker demo-ysb demo-pair fuzz cover clean image

all: build

deps:
	@scripts/ensure-deps.sh

# --version names the commit: the go command stamps it where it can, and
# -X stamps it where it does not (GOFLAGS=-buildvcs=false, a git worktree);
# outside a git checkout there is none to name.
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo +modified)
build: deps
	$(GO) build -ldflags "-X github.com/cloudprofiler-go/cp/cmd/internal/cli.commit=$(COMMIT)" $(GOFLAGS) -o $(BIN)/ ./cmd/...

# Unit, race, fuzz-seed and integration tests (the integration tests build
# and start the real binaries on loopback; they run after the other
# packages, alone on the host, since their trials are timed and a 2-core
# machine shared with the unit tests starved them). The summary lists every skipped
# test with its reason; CP_REQUIRE_ALL=1 (CI as root) turns the skips of a
# missing tool or privilege into failures.
test: deps
	@scripts/ensure-test-deps.sh
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) test -race -count=1 ./cpustat/ ./driver/ ./driver/nats/ ./sweep/discover/ ./objfactory/ ./receiver/ ./sender/ ./stage/ ./servicerate/ ./diagnose/ ./internal/histo/ ./internal/zmqraw/ ./profiler/ ./tsc/... ./sweep/watch/ ./sweep/agent/ ./internal/httpapi/ ./sut/benthos/
	{ $(GO) test -count=1 -json $$($(GO) list ./... | grep -v /internal/testkit/e2e); \
	  $(GO) test -count=1 -timeout 40m -json ./internal/testkit/e2e/; } | $(GO) run ./scripts/testsummary

# The fast part of make test: vet and the unit tests of every package but
# internal/testkit/e2e (no root needed, no binaries started; ~1 min).
unit: deps
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /internal/testkit/e2e)

# The integration tests on the real binaries: loopback, and as root network
# namespaces and small tmpfs file systems (~11 min: more than go test's
# default timeout of 10 min, which killed the binary mid-test and left its
# servers running).
e2e: deps
	@scripts/ensure-test-deps.sh
	$(GO) test -count=1 -timeout 40m -json ./internal/testkit/e2e/ | $(GO) run ./scripts/testsummary

# Statement coverage per package: a statement counts when any package's
# unit or integration tests ran it (-coverpkg; the receiver's loopback
# tests drive the sender, the agent tests drive a whole sweep). The
# binaries started by internal/testkit/e2e are not counted. Fails when sweep,
# sweep/agent, sender or wire is below 70%.
cover: deps
	$(GO) test -count=1 -coverpkg=./... -coverprofile=$(BIN)/cover.out $$($(GO) list ./... | grep -v -e /internal/testkit/e2e -e /scripts/) >/dev/null
	$(GO) run ./scripts/coversummary -min 70 -require sweep,sweep/agent,sender,wire $(BIN)/cover.out

lint: deps
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest
	$$($(GO) env GOPATH)/bin/staticcheck ./...

# The plain C reference sender and receiver that emission is judged
# against (internal/testkit/cref; the benchmarks compile their own copy too).
cref: deps
	$(CC) -O2 -Wall -o $(BIN)/cref-send internal/testkit/cref/src/send.c -lzmq
	$(CC) -O2 -Wall -o $(BIN)/cref-recv internal/testkit/cref/src/recv.c -lzmq

# Micro-benchmarks, then the end-to-end figures recorded in BENCHMARKS.md
# (emission as ours ÷ the C reference from the same run), then a 30-minute
# soak (CP_SOAK=5m shortens it).
bench: build cref
	$(GO) test -run '^$$' -bench . -benchmem $$(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u | grep -v -e /internal/testkit/e2e -e /analysis$$)
	CP_RAW_CEILING=124,10024 $(GO) test -count=1 -run '^TestRawCeiling$$' -v ./internal/zmqraw/ | grep -E 'CGO PATH|^(ok|FAIL)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBench' -skip '^TestBench(Soak|StallDetection|BottleneckNaming|SweepNamesItsLimit|AccountingOverhead|YSBFixedRates|YSBSweeps|OperatorLimits|OperatorAccountingCost)$$' -v -timeout 150m ./internal/testkit/e2e/ | grep -E 'EMISSION|E2E|ACCURACY|SWEEP|CAPACITY|OVERHEAD|DEMO|SERVICE RATE|ACTIVITY|LIVE|COST|BROKER|REDIS|RELAY|^(ok|FAIL|---)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBench(StallDetection|BottleneckNaming|SweepNamesItsLimit|AccountingOverhead)$$' -v -timeout 60m ./internal/testkit/e2e/ | grep -E 'STALLS|BOTTLENECK|LIMIT|ACCOUNTING|^(ok|FAIL|---)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBenchYSB(FixedRates|Sweeps)$$' -v -timeout 150m ./internal/testkit/e2e/ | grep -E 'YSB|FILTER|^(ok|FAIL|---)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBenchOperator(Limits|AccountingCost)$$' -v -timeout 150m ./internal/testkit/e2e/ | grep -E 'OPLIMIT|ACCOUNTING|^(ok|FAIL|---)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBenchSoak$$' -v -timeout 40m ./internal/testkit/e2e/ | grep -E 'SOAK|^(ok|FAIL|---)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBenchAnalyzeScale$$' -v -timeout 20m ./analysis/ | grep -E 'generated|ANALYZE|^(ok|FAIL)'
	CP_BENCH=1 $(GO) test -count=1 -run '^TestBenchInstructionsPerCall$$' -v -timeout 20m ./profiler/ | grep -E 'INSTRUCTIONS|^(ok|FAIL)'

# The main job on loopback: cpsweep starts local dgsend/dgrecv agents, finds
# the maximum sustainable throughput, relates the agents' TSCs, runs one
# profiled trial at 90% of the answer, then analyses the logs (latencies and
# the activity graph) and writes report.html into the run directory under
# runs/ (~1-2 min).
# A host busy with other work (exit 7) gets one line that says what to do.
demo: build
	@echo '$(BIN)/cpsweep --duration 2s --warmup 500ms --start 500k --bucket 100 --name demo --clock --profile profiles/default.yaml --profile-at 0.9'
	@$(BIN)/cpsweep --duration 2s --warmup 500ms --start 500k --bucket 100 --name demo --clock --profile profiles/default.yaml --profile-at 0.9 \
	  || { s=$$?; [ $$s -ne 7 ] || echo "make demo: other work on this host disturbed every repeat of a trial (its share is above): let it finish, or stop it, and run make demo again"; exit $$s; }
	@dir=$$(ls -td runs/*-demo | head -1) && $(BIN)/cpsweep analyze --pag -q $$dir && $(BIN)/cpsweep report $$dir

# The container image for Kubernetes (Containerfile; docs/kubernetes.md)
# with podman or docker. Where no base image can be pulled (a closed
# network), it is built from bin/ and this host's libraries instead.
# The same name as cpsweep deploy kubernetes's and the Helm chart's default
# (deploy.DefaultImage; TestOneImageName).
IMAGE ?= cloudprofiler-go/cp:latest
image: build
	@engine=$$(command -v podman || command -v docker) || { echo "make image needs podman or docker"; exit 1; }; \
	if $$engine build -f Containerfile -t $(IMAGE) .; then echo "built $(IMAGE)"; \
	else echo "the base images could not be pulled: building $(IMAGE) from $(BIN)/ and this host's libraries"; \
		ENGINE=$$engine scripts/image-from-host.sh $(IMAGE); fi

# The main job through a real broker with nothing installed: a NATS server
# with JetStream (file storage) inside cpsweep, local agents publishing into
# it and consuming from it, then the report (~1-2 min; docs/brokers.md).
demo-broker: build
	$(BIN)/cpsweep demo nats -- --duration 2s --warmup 500ms --start 50k --bucket 100 --name demo-broker
	@dir=$$(ls -td runs/*-demo-broker | head -1) && $(BIN)/cpsweep report $$dir && echo "open $$dir/report.html"

# A sweep of YSB on the Benthos engine between two JetStream subjects, its
# campaigns in Redis, on loopback: the highest rate at which the job's
# windows stay exact, YSB's window latency, and the report (~2-3 min;
# docs/sut.md).
demo-ysb: build
	scripts/demo-ysb.sh

# A short dgsend -> dgrecv run on loopback with a summary of both sides.
demo-pair: build
	scripts/demo.sh

fuzz: deps
	$(GO) test -run '^$$' -fuzz FuzzBucketDecode -fuzztime 60s ./objfactory/
	$(GO) test -run '^$$' -fuzz FuzzFastPathsAgree -fuzztime 60s ./scenarios/
	$(GO) test -run '^$$' -fuzz FuzzDecodePacket -fuzztime 60s ./tsc/
	$(GO) test -run '^$$' -fuzz FuzzBlockReader -fuzztime 60s ./profiler/
	$(GO) test -run '^$$' -fuzz FuzzBlocksAcrossBufferEdges -fuzztime 30s ./profiler/
	$(GO) test -run '^$$' -fuzz FuzzDecodeAck -fuzztime 30s ./profiler/
	$(GO) test -run '^$$' -fuzz FuzzSkip -fuzztime 30s ./wire/
	$(GO) test -run '^$$' -fuzz FuzzTimeline -fuzztime 30s ./diagnose/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./sweep/watch/
	$(GO) test -run '^$$' -fuzz FuzzActivityReply -fuzztime 30s ./sweep/watch/
	$(GO) test -run '^$$' -fuzz FuzzParseSince -fuzztime 30s ./sweep/agent/
	$(GO) test -run '^$$' -fuzz FuzzJobResult -fuzztime 30s ./protocol/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./sweep/jobmetrics/
	$(GO) test -run '^$$' -fuzz FuzzWireParse -fuzztime 30s ./driver/nats/

clean:
	rm -rf $(BIN)
