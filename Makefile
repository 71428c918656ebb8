# inferbench: `make test` is the one test command (README.md, .ci/run).
GO ?= go

# The toolchain every target uses; Go 1.26 fetches it from the module proxy.
export GOTOOLCHAIN := go1.27.3

.PHONY: test testdata vet unit fuzz bench

# test fetches missing test data, then vets and runs every test with the race detector.
test: testdata vet unit

testdata:
	@bash scripts/testdata.sh

# vet also checks the cgo tokenizer backend, which the default build leaves out
# (it only compiles there: linking needs libtokenizers, see promptsize/hfcgo).
vet:
	$(GO) vet ./...
	$(GO) vet -tags hftokenizers ./promptsize/hfcgo/...

unit:
	$(GO) test -race -timeout 20m ./...

# fuzz runs every native fuzz target for FUZZTIME each (default 10s; FUZZ=regexp
# picks targets). `make test` runs only their seed corpora, as ordinary tests.
FUZZTIME ?= 10s
fuzz:
	@FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

# bench runs the Go benchmark functions once each (figures, not pass/fail).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
