#!/usr/bin/env bash
# Runs every native fuzz target of the module for a bounded time each:
# FUZZTIME (default 10s) per target, one target at a time, so the whole run
# takes about FUZZTIME × the number of targets plus compile time.
#
#   make fuzz                    # every target, 10s each
#   FUZZTIME=2m make fuzz        # longer
#   FUZZ=SSE make fuzz           # only targets whose name matches the regexp
#
# New inputs that fail are written under the package's testdata/fuzz/<Target>/
# by `go test`; commit them, and `go test` replays them on every run.
# `make test` does not call this script: it runs each target's seed corpus
# (its f.Add seeds and testdata/fuzz files) as ordinary tests.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-10s}
filter=${FUZZ:-.}
go=${GO:-go}

# "<dir> <target>" for every func FuzzX(f *testing.F) in a test file, in a
# stable order. Files behind build tags (the cgo tokenizer) are left out.
targets=$(
	for f in $(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . | sort); do
		grep -q '^//go:build' "$f" && continue
		grep -E -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed -E "s#^func #$(dirname "${f#./}") #"
	done | sort -u
)

failed=0
n=0
while read -r dir target; do
	[[ -z "$dir" ]] && continue
	[[ "$target" =~ $filter ]] || continue
	n=$((n + 1))
	echo "== $target ./$dir ($fuzztime)"
	if ! "$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir"; then
		echo "FAIL: $target in ./$dir" >&2
		failed=$((failed + 1))
	fi
done <<<"$targets"

echo "fuzz: $n target(s) run for $fuzztime each, $failed failed"
[[ $failed -eq 0 ]]
