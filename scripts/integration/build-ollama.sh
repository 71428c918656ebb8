#!/usr/bin/env bash
# build-ollama.sh PREFIX VERSION: builds Ollama VERSION from its Go module
# (the module proxy's zip carries the vendored llama.cpp and ggml) into
# PREFIX/bin/ollama with its CPU backend in PREFIX/lib/ollama, where the
# binary looks on Linux (../lib/ollama beside it; discover/path.go).
#
# Only one CPU variant of ggml is built, the best this machine runs: the
# top-level CMakeLists turns on all five x86 variants, five times the
# compile on a small machine, and Ollama loads whichever library it finds.
# The build happens in a temporary directory and PREFIX appears only when
# everything is in place, so an interrupted build is never taken for a
# cached one.
set -euo pipefail

prefix=${1:?usage: build-ollama.sh PREFIX VERSION}
version=${2:?usage: build-ollama.sh PREFIX VERSION}
jobs=${INTEGRATION_JOBS:-1}

start=$SECONDS
log() { printf "integration: [%3ds] %s\n" $((SECONDS - start)) "$*" >&2; }

# The variant list is the one in ml/backend/ggml/ggml/src/CMakeLists.txt
# (ggml_add_cpu_backend_variant). Non-x86 machines get the single native
# library (the top-level CMakeLists leaves the variants off there).
cpu_variant() {
	case "$(uname -m)" in
	x86_64 | amd64) ;;
	*) return 0 ;;
	esac
	local flags
	flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
	has() { for f; do [[ $flags == *" $f "* ]] || return 1; done; }
	if has avx512f avx512vbmi avx512_vnni; then echo icelake
	elif has avx512f; then echo skylakex
	elif has avx_vnni avx2 fma f16c; then echo alderlake
	elif has avx2 fma f16c; then echo haswell
	elif has avx; then echo sandybridge
	else
		log "this CPU has no AVX: Ollama's x86 CPU variants all need it"
		return 1
	fi
}

parent=$(dirname "$prefix")
mkdir -p "$parent"
work=$(mktemp -d "$parent/.build-ollama.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# Outside any module, so that the download touches no go.mod.
log "downloading github.com/ollama/ollama@$version from the module proxy"
dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/ollama/ollama@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $dir && -d $dir ]] || { log "go mod download gave no source directory"; exit 1; }
src=$work/src
cp -R "$dir" "$src"
chmod -R u+w "$src"

variant=$(cpu_variant)
log "configuring the CPU backend (${variant:-native}) with cmake"
(cd "$src" && cmake -B build -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1) ||
	{ tail -40 "$work/cmake.log" >&2; exit 1; }
target=ggml-cpu${variant:+-$variant}
log "building $target with $jobs job(s)"
(cd "$src" && cmake --build build --target "$target" --parallel "$jobs" >>"$work/cmake.log" 2>&1) ||
	{ tail -40 "$work/cmake.log" >&2; exit 1; }

log "building the ollama binary (cgo)"
(cd "$src" && CGO_ENABLED=1 go build -p "$jobs" -trimpath \
	-ldflags "-X github.com/ollama/ollama/version.Version=${version#v}" -o "$work/stage/bin/ollama" .) ||
	{ log "go build failed"; exit 1; }

mkdir -p "$work/stage/lib/ollama"
cp -P "$src"/build/lib/ollama/*.so* "$work/stage/lib/ollama/"
printf 'ollama %s\ncpu %s\n' "$version" "${variant:-native}" >"$work/stage/BUILD"
rm -rf "$prefix"
mv "$work/stage" "$prefix"
log "installed $prefix"
