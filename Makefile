# hedge: `make run` serves with the defaults, `make test` runs every test.
# Go with cgo (a C compiler) is all that is needed; DuckDB is linked from the Go module.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
export CGO_ENABLED := 1

# duckdb-go builds its Arrow reader, which funnels read their millions of rows with,
# only with this tag. Without it hedge builds as well (a plain go build), and funnels
# read their rows through the driver, which is slower (see the README).
TAGS := duckdb_arrow

# The Node project whose posthog-node and posthog-js the SDK tests drive.
SDK_TESTS := edge/testdata/sdk-js

# The S3-compatible server that the batch export tests upload to, built from the Go
# module proxy at a pinned version.
VERSITYGW := github.com/versity/versitygw/cmd/versitygw@v1.8.0

# sudo where make does not run as root, for the browser's install.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run build test lint sdk-deps s3-server web-deps browser-deps web screenshots bench bench-quick

## run: build hedge and serve on 127.0.0.1:8000 (management) and :8001 (capture), data in ./hedge-data
run: build
	./bin/hedge serve

## build: build ./bin/hedge
build:
	go build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o bin/hedge .

## test: gofmt and go vet, the SDKs, the S3 server and the browser the tests drive, then every test
# The binary's tests of durability, restarts and the SDKs, run again on the direct path
# (hedge serve reads HEDGE_LOG; the event log is the default): every 200 stored once
# across kill -9, retries, drains.
DIRECT_TESTS = TestBinaryCrashAndShutdown|TestBinaryShutdownSignals|TestServeBootstrapAndRestart|TestNodeSDKs|TestNodeRetryAfterKill|TestNodeRetryUnderLoadAfterKill

# The root package's tests (the binary, the browser, the SDKs) run one after another
# for some 8-10 minutes on two cores: past go test's default 10-minute bound per package.
test: lint sdk-deps s3-server web-deps browser-deps
	HEDGE_REQUIRE_SDK_TESTS=1 HEDGE_REQUIRE_S3_TESTS=1 HEDGE_REQUIRE_BROWSER_TESTS=1 HEDGE_VERSITYGW=$(CURDIR)/bin/versitygw go test -tags $(TAGS) -count=1 -timeout 20m ./...
	go test -count=1 -run Funnel ./warehouse # the funnels' reader of builds without the tag
	HEDGE_LOG=direct HEDGE_REQUIRE_SDK_TESTS=1 go test -tags $(TAGS) -count=1 -run '$(DIRECT_TESTS)' . # the same binary under --log direct

## sdk-deps: install the pinned posthog-node, posthog-js and jsdom for the SDK tests
sdk-deps:
	npm ci --prefix $(SDK_TESTS) --no-audit --no-fund

## s3-server: install the pinned versitygw into ./bin for the S3 export tests
s3-server:
	GOBIN=$(CURDIR)/bin go install $(VERSITYGW)

## web-deps: install the console's pinned npm packages: its bundle's sources, and axe-core for the browser tests
web-deps:
	npm ci --prefix web --no-audit --no-fund

## browser-deps: install Debian's chromium-headless-shell for the browser tests, unless one is there
browser-deps:
	@if [ -z "$$HEDGE_CHROMIUM" ] && ! command -v chromium-headless-shell >/dev/null; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends chromium-headless-shell; fi

## web: rebuild the console's committed bundle (web/dist) after changing web/src
web: web-deps
	go run ./web/build

## screenshots: every console screen at 1280x800 in the light and the dark theme, into ./screenshots
screenshots: web-deps browser-deps
	HEDGE_REQUIRE_BROWSER_TESTS=1 HEDGE_SCREENSHOTS=$(CURDIR)/screenshots go test -tags $(TAGS) -count=1 -run 'TestConsole' .

## lint: fail on unformatted files and on go vet findings
lint:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	go vet -tags $(TAGS) ./...
	go vet ./warehouse

## bench: build hedge and measure it on a temporary data directory: stage ceilings and
## end-to-end scenarios side by side (under 10 minutes, and 5 of sustained load), then the queries on 10M generated
## events (some 4 more, 2 more to generate them the first time); writes bench/results/<date>-<commit>.json
bench: build
	go run ./bench suite -hedge ./bin/hedge

## bench-quick: a two-minute subset of make bench
bench-quick: build
	go run ./bench suite -mode quick -hedge ./bin/hedge
