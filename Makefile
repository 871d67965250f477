# hedge: `make run` serves with the defaults, `make test` runs every test.
# Go with cgo (a C compiler) is all that is needed; DuckDB is linked from the Go module.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
export CGO_ENABLED := 1

# The Node project whose posthog-node and posthog-js the SDK tests drive.
SDK_TESTS := edge/testdata/sdk-js

# The S3-compatible server that the batch export tests upload to, built from the Go
# module proxy at a pinned version.
VERSITYGW := github.com/versity/versitygw/cmd/versitygw@v1.8.0

.PHONY: run build test lint sdk-deps s3-server bench bench-quick

## run: build hedge and serve on 127.0.0.1:8000 (management) and :8001 (capture), data in ./hedge-data
run: build
	./bin/hedge serve

## build: build ./bin/hedge
build:
	go build -ldflags "$(LDFLAGS)" -o bin/hedge .

## test: gofmt and go vet, the SDKs and the S3 server the tests drive, then every test
test: lint sdk-deps s3-server
	HEDGE_REQUIRE_SDK_TESTS=1 HEDGE_REQUIRE_S3_TESTS=1 HEDGE_VERSITYGW=$(CURDIR)/bin/versitygw go test -count=1 ./...

## sdk-deps: install the pinned posthog-node, posthog-js and jsdom for the SDK tests
sdk-deps:
	npm ci --prefix $(SDK_TESTS) --no-audit --no-fund

## s3-server: install the pinned versitygw into ./bin for the S3 export tests
s3-server:
	GOBIN=$(CURDIR)/bin go install $(VERSITYGW)

## lint: fail on unformatted files and on go vet findings
lint:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	go vet ./...

## bench: build hedge and measure it on a temporary data directory: stage ceilings and
## end-to-end scenarios side by side (under 10 minutes), then the queries on 10M generated
## events (some 4 more, 2 more to generate them the first time); writes bench/results/<date>-<commit>.json
bench: build
	go run ./bench suite -hedge ./bin/hedge

## bench-quick: a one-minute subset of make bench
bench-quick: build
	go run ./bench suite -mode quick -hedge ./bin/hedge
