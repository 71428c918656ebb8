#!/usr/bin/env bash
# chromium.sh makes sure a headless browser is there for the browser tests
# (internal/browser: the report pages opened in Chromium) and prints its path
# on stdout. It takes $INFERBENCH_CHROMIUM when set, else the first of
# chromium, chromium-browser, google-chrome and google-chrome-stable on the
# PATH, else installs Debian's chromium (and fonts-liberation) with apt-get (as root, or through sudo
# when that needs no password).
#
# When no browser can be had (no apt-get, no root, the install failed) it says
# so on stderr, prints nothing and exits 0: the browser tests then skip with a
# line saying how to install one. Under CI=true it exits 1 instead, as the
# tests fail there.
#
#   --no-install   only look; never install (prints nothing when none is found)
set -euo pipefail

log() { printf 'chromium.sh: %s\n' "$*" >&2; }

find_browser() {
	if [[ -n ${INFERBENCH_CHROMIUM:-} ]]; then
		command -v "$INFERBENCH_CHROMIUM" 2>/dev/null && return 0
		log "INFERBENCH_CHROMIUM=$INFERBENCH_CHROMIUM is not an executable"
		return 1
	fi
	local n
	for n in chromium chromium-browser google-chrome google-chrome-stable; do
		command -v "$n" 2>/dev/null && return 0
	done
	return 1
}

# missing reports that no browser can be had: a skip, or under CI an error.
missing() {
	log "$*"
	if [[ ${CI:-} == true ]]; then
		log "CI=true, so a missing browser is an error"
		exit 1
	fi
	log "the browser tests will skip; install Chromium (apt-get install chromium) or set INFERBENCH_CHROMIUM"
	exit 0
}

if find_browser; then
	exit 0
fi
[[ ${1:-} == --no-install ]] && exit 0
[[ -z ${INFERBENCH_CHROMIUM:-} ]] || missing "INFERBENCH_CHROMIUM names no browser"

command -v apt-get >/dev/null || missing "no Chromium on the PATH and no apt-get to install it"
sudo=()
if [[ $(id -u) != 0 ]]; then
	command -v sudo >/dev/null || missing "no Chromium on the PATH; installing it needs root or sudo"
	sudo -n true 2>/dev/null || missing "no Chromium on the PATH; installing it needs sudo without a password"
	sudo=(sudo -n)
fi
# fonts-liberation: the plots name Liberation Serif, and a screenshot should
# show them as a reader's machine does.
log "installing chromium and fonts-liberation (apt-get), once"
if ! "${sudo[@]}" apt-get update -qq >/dev/null ||
	! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; then
	missing "apt-get install chromium failed"
fi
find_browser || missing "apt-get installed chromium, but it is not on the PATH"
