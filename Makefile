# inferbench: `make test` is the one test command (README.md, .ci/run).
GO ?= go

# The toolchain every target uses; Go 1.26 fetches it from the module proxy.
export GOTOOLCHAIN := go1.27.3

.PHONY: test chromium testdata tidy vet staticcheck unit fuzz bench

# test installs Chromium where it is missing and fetches missing test data,
# then runs the gates (go.mod tidy, go vet, staticcheck) and every test with
# the race detector. Each gate fails the run on its first finding.
test: chromium testdata tidy vet staticcheck unit

# chromium makes sure a headless browser is there for the browser tests (the
# report pages opened in Chromium, internal/browser): scripts/chromium.sh
# installs Debian's chromium with apt-get, as root or through sudo, where none
# is found. Where it cannot, the rest still runs and those tests skip, saying
# how to install one; under CI=true the target fails instead.
chromium:
	@bash scripts/chromium.sh >/dev/null

testdata:
	@bash scripts/testdata.sh

# vet also checks the cgo tokenizer backend, which the default build leaves out
# (it only compiles there: linking needs libtokenizers, see promptsize/hfcgo).
vet:
	$(GO) vet ./...
	$(GO) vet -tags hftokenizers ./promptsize/hfcgo/...

# tidy fails when go.mod or go.sum differs from what `go mod tidy` writes
# (printing the diff): a dependency marked or left wrongly, the tool
# directive's dependencies included. Run `go mod tidy` to fix it.
tidy:
	$(GO) mod tidy -diff

# staticcheck runs the version pinned by go.mod's tool directive, with the
# default checks and the exceptions written beside the code (//lint:ignore
# with its reason). It keeps its results in the user cache directory
# ($XDG_CACHE_HOME or ~/.cache, then staticcheck/; STATICCHECK_CACHE moves
# it), so a second run rechecks only the packages that changed. Like vet,
# it also checks the cgo tokenizer backend, which type-checks without linking.
staticcheck:
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags hftokenizers ./promptsize/hfcgo/...

# unit hands the tests the browser scripts/chromium.sh finds (without
# installing one) as INFERBENCH_CHROMIUM, unless that is set already.
unit:
	INFERBENCH_CHROMIUM="$${INFERBENCH_CHROMIUM:-$$(bash scripts/chromium.sh --no-install)}" $(GO) test -race -timeout 20m ./...

# fuzz runs every native fuzz target for FUZZTIME each (default 10s; FUZZ=regexp
# picks targets). `make test` runs only their seed corpora, as ordinary tests.
FUZZTIME ?= 10s
fuzz:
	@FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

# bench runs the Go benchmark functions once each (figures, not pass/fail).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# integration runs the build-tagged tests of integration/ against a real server:
# a pinned Ollama built from its Go module once (then reused from the user cache,
# $XDG_CACHE_HOME or ~/.cache, then inferbench/), serving a tiny random-weight
# model with the real Llama 3.1 tokenizer. `make test` never runs them.
# docs/INTEGRATION.md says what they check and how to aim them at another server.
.PHONY: integration
integration:
	@bash scripts/integration.sh
